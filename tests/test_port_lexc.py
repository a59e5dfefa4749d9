"""The compiled lexer (port/_lexc.c) gives the Python lexer's tokens, on generated text and on
the corpora, and the translation is the same with it and without it."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuparity.port import lexer
from gpuparity.port.lexer import lex_python
from gpuparity.port.translate import translate_source

SAMPLES = Path(__file__).parent / "data" / "cuda_samples"
HIPIFY_TESTS = Path(__file__).parent / "data" / "hipify-unit-tests"  # HIPIFY's own tests, copied
FUZZ = settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
compiled = pytest.mark.skipif(lexer._lexc is None, reason="the compiled lexer was not built")

# The characters and pieces where the two lexers could part: literal prefixes, raw-string
# delimiters (16 is the longest), digit separators and exponents, continuations with \r,
# directives, launches and template closers, NUL, Unicode letters, digits and spaces.
_PIECES = st.sampled_from([
    "u8", "u", "U", "L", "R", '"', "'", "(", ")", "\\", "\n", "\r", "\r\n", " ", "\t", "\f", "\v", "\x1c", "\x00",
    "#", "##", "include", "include_next", "import", "define", "<", ">", "<<<", ">>>", "=", "-", "*", "/", ".", "..",
    "...", ":", "e", "E+", "p-", "1", "0x1f", "'0", "_", "$", "cudaMalloc", "a", "/*", "*/", "//", "x", "é",
    "\u0663", "\u00b2", "\u2003", "\udce9", "&", "|", "+", "!", "%", "^",
    'R"(', ')"', 'R"abcdefghijklmnop(', ')abcdefghijklmnop"', 'R"abcdefghijklmnopq(', ')abcdefghijklmnopq"',
])


def test_the_compiled_lexer_is_built_where_it_can_be():
    """Where a C compiler and Python's headers are, the install builds it (a silent fallback
    would cost the speed unseen)."""
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if shutil.which("cc") is None and shutil.which("gcc") is None or not headers.is_file():
        pytest.skip("no C compiler or no Python.h: the Python lexer runs")
    assert lexer._lexc is not None


@compiled
@FUZZ
@given(st.lists(_PIECES, max_size=60), st.integers(0, 1000), st.integers(1, 50), st.booleans(), st.booleans(),
       st.integers(0, 2))
def test_compiled_and_python_lexers_agree(pieces, base, line, in_directive, line_start, open_launches):
    text = "".join(pieces)
    ours, theirs = [open_launches], [open_launches]
    assert lexer.lex(text, base, line, in_directive, line_start, ours) == \
        lex_python(text, base, line, in_directive, line_start, theirs)
    assert ours == theirs  # the `<<<` still open, carried to the next fragment


# The edges one at a time: each alternative of lexer._LEX at its limits.
_EDGES = ['R"abcdefghijklmnop(x)abcdefghijklmnop"', 'R"abcdefghijklmnopq(x)abcdefghijklmnopq"', 'u8R"(a)"', 'LR"d(a)d"',
          'R"d(a)e"', 'R"( ', 'u8"a', "u8'a'", 'U8"a"', "1'000'0", "0x1p+3f", ".5e-2", "1.e", "'\\\n'", '"a\\',
          "// a \\\r\nb\n", "/*/ */", "a<<<b>>>c>>>d", "#  include_next <a/b.h> x", "#import\t\"q\"", "# \n#",
          "#include <a\n>", "x = y ## z", "a->*b <=> c <<= d >>= e", "\x00=", "\u00e9t\u00e9 \u0663\u0664 x\u00b2",
          "\\\r\n\\\rx"]


@compiled
@pytest.mark.parametrize("text", _EDGES)
def test_compiled_and_python_lexers_agree_at_the_edges(text):
    for args in ((0, 1, False, True), (10, 4, True, False)):
        assert lexer.lex(text, *args) == lex_python(text, *args)


@compiled
def test_compiled_lexer_agrees_on_the_corpora():
    files = sorted(SAMPLES.rglob("*.cu*")) + sorted(HIPIFY_TESTS.rglob("*.cu")) + sorted(HIPIFY_TESTS.rglob("*.cpp"))
    assert len(files) > 125  # the samples and HIPIFY's 125 tests
    for path in files:
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        tokens, kinds, texts, directives = lexer.lex_columns(text)
        assert tokens == lex_python(text), path
        assert kinds == [t.kind for t in tokens] and texts == [t.text for t in tokens]
        assert directives == [i for i, t in enumerate(tokens) if t.kind == "pp"]


def test_translation_is_the_same_without_the_compiled_lexer(monkeypatch):
    texts = [(SAMPLES / name).read_text() for name in ("vector_add_streams.cu", "warp_reduce.cu", "cublas_sgemm.cu")]
    with_it = [translate_source(t, cuda_source=True) for t in texts]
    monkeypatch.setattr(lexer, "_lexc", None)
    for text, before in zip(texts, with_it, strict=True):
        after = translate_source(text, cuda_source=True)
        assert (after.text, after.uses, after.tokens) == (before.text, before.uses, before.tokens)
        assert after.text != text  # something was translated


@compiled
def test_compiled_lexer_refuses_what_is_not_text():
    with pytest.raises(TypeError):
        lexer._lexc.lex(b"bytes", 0, 1, False, True, 0)
