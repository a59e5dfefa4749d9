"""Split CUDA/C++ source into tokens: the hand-written lexer.

`lex` runs the compiled lexer (_lexc.c) where the install built it; `lex_python` is its
reference in Python, run elsewhere, and tests hold the two to the same tokens.

In Python, two ways to the same tokens: `lex_python` walks token by token and places a fragment (a macro body,
the code between tree-sitter's regions) inside its file; `lex_file` lexes a whole file at the
regex engine's speed, building the columns (kind, text, offsets, line) with map/accumulate/
compress, which run in C, and looking one by one only at the few tokens that change the
lexer's state: a `#` that starts a directive (merged with its name, an #include's header name
read whole), and `<<<` / `>>>` (a `>>>` with no open launch is two template closers). Where
`lex_file` cannot be sure to match `lex_python` (a header name that straddles tokens, a character
literal spanning lines, ...) it returns None and the caller uses `lex`.

Whitespace is not kept: the text between two tokens is copied through unchanged.
"""

from __future__ import annotations

import gc
import re
from itertools import accumulate, compress, repeat
from operator import add, itemgetter, sub
from typing import NamedTuple

try:  # built at install where a C compiler and Python's headers are (pyproject.toml)
    from gpuparity.port import _lexc
except ImportError:
    _lexc = None


class Token(NamedTuple):
    kind: str  # id num str chr comment punct pp header
    text: str
    start: int  # character offsets into the source
    end: int
    line: int  # 1-based line of the first character
    directive: str = ""  # '' in code; else the directive it sits in: include, define, if, pragma ...


if _lexc is not None:
    _lexc.configure(Token)

# Leading blanks are folded into each match: half the matches would otherwise be spaces.
# The last punct alternative takes any other character (e.g. \x1c, which regex counts as
# whitespace) so that every position matches.
_LEX = re.compile(
    r"""
    [ \t\r\f\v]*
    (?:
    (?P<nl>\n)
   |(?P<cont>\\\r?\n)
   |(?P<comment>//(?:\\\r?\n|[^\n])*|/\*[\s\S]*?(?:\*/|\Z))
   |(?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\([\s\S]*?\)(?P=delim)")
   |(?P<str>(?:u8|[uUL])?"(?:\\[\s\S]|[^"\\\n])*"?)
   |(?P<num>\.?\d(?:[eEpP][+-]|'?[\w.])*)
   |(?P<chr>(?:u8|[uUL])?'(?:\\[\s\S]|[^'\\\n])*'?)
   |(?P<id>[A-Za-z_$][\w$]*)
   |(?P<punct><<<|>>>|->\*?|::|\.\.\.|<<=|>>=|<=>|[-+*/%&|^!=<>]=|<<|>>|&&|\|\||\+\+|--|\#\#|[^\n])
   |\Z
    )
    """,
    re.X,
)
_HEADER = re.compile(r"[ \t]*(<[^>\n]*>|\"[^\"\n]*\")")
_DIRECTIVE_NAME = re.compile(r"[ \t]*([A-Za-z_]\w*)?")
_KIND = {"comment": "comment", "raw": "str", "str": "str", "num": "num", "chr": "chr",
         "id": "id", "punct": "punct"}


def lex(text: str, base: int = 0, line: int = 1, in_directive: bool = False,
        line_start: bool = True, launches: list[int] | None = None) -> list[Token]:
    """The tokens of text. `base`/`line` place a fragment (a macro body) inside its file;
    `line_start` says whether the fragment begins a line (a '#' there starts a directive);
    `launches` carries the count of open `<<<` from one fragment to the next.
    The compiled lexer (_lexc.c) where it was built, else lex_python: the same tokens."""
    if _lexc is None:
        return lex_python(text, base, line, in_directive, line_start, launches)
    launches = launches if launches is not None else [0]
    tokens, _, _, _, launches[0] = _lexc.lex(text, base, line, in_directive, line_start, launches[0])
    return tokens


def lex_python(text: str, base: int = 0, line: int = 1, in_directive: bool = False,
               line_start: bool = True, launches: list[int] | None = None) -> list[Token]:
    """The hand-written lexer in Python: lex's reference, run where _lexc.c was not built."""
    out: list[Token] = []
    append = out.append
    at_line_start = line_start and not in_directive
    launches = launches if launches is not None else [0]
    match = _LEX.match
    kinds = _KIND
    new = tuple.__new__  # Token(...) without NamedTuple's Python-level __new__: the lexer's hot path
    pos = 0
    n = len(text)
    while pos < n:
        m = match(text, pos)
        group = m.lastgroup
        end = m.end()
        if group is None:  # trailing blanks
            break
        if group == "nl":
            line += 1
            at_line_start = not in_directive
            pos = end
            continue
        if group == "cont":
            line += 1
            pos = end
            continue
        tok_text = m.group(group)
        start = end - len(tok_text)
        if group == "id":
            append(new(Token, ("id", tok_text, base + start, base + end, line, "")))
            at_line_start = False
            pos = end
            continue
        if group == "punct":
            if tok_text == "#" and at_line_start:
                nm = _DIRECTIVE_NAME.match(text, end)
                end = nm.end()
                name = nm.group(1) or ""
                append(Token("pp", "#" + name, base + start, base + end, line))
                if name in ("include", "include_next", "import"):
                    hm = _HEADER.match(text, end)
                    if hm:
                        append(Token("header", hm.group(1), base + hm.start(1), base + hm.end(1), line))
                        end = hm.end()
                at_line_start = False
                pos = end
                continue
            if tok_text == "<<<":
                launches[0] += 1
            elif tok_text == ">>>":
                if launches[0]:
                    launches[0] -= 1
                else:  # `a<b<c<int>>>`: template closers, not a launch
                    append(Token("punct", ">>", base + start, base + start + 2, line))
                    append(Token("punct", ">", base + start + 2, base + end, line))
                    at_line_start = False
                    pos = end
                    continue
            append(new(Token, ("punct", tok_text, base + start, base + end, line, "")))
            at_line_start = False
            pos = end
            continue
        kind = kinds[group]
        append(new(Token, (kind, tok_text, base + start, base + end, line, "")))
        if kind != "comment":
            at_line_start = False
        if kind in ("comment", "str"):
            line += tok_text.count("\n")
        pos = end
    return out



# ---------------------------------------------------------------- a whole file at once

# _LEX's alternatives, in an order that fails fewer branches per token: identifiers
# first (unless a quote follows: u8"..", L'x', R"(..)" are literals; the lookahead refuses a
# shorter identifier too), then the common punctuation (none of it can start a comment,
# literal or number), then the rest in _LEX's order. re.split gives (blanks, token, raw
# string delimiter) per token as one flat list, with no match object per token.
_SPLIT = re.compile(
    r"""
    ([ \t\r\f\v]*)
    (
    [A-Za-z_$][\w$]*(?![\w$"'])
   |<<<|>>>|->\*?|::|\.\.\.|<<=|>>=|<=>|[-+*/%&|^!=<>]=|<<|>>|&&|\|\||\+\+|--|\#\#
   |[(){}\[\],;=*&<>+\-!~?:|^%]|\.(?!\d)
   |\n
   |\.?\d(?:[eEpP][+-]|'?[\w.])*
   |//(?:\\\r?\n|[^\n])*|/\*[\s\S]*?(?:\*/|\Z)
   |(?:u8|[uUL])?R"([^()\\\s"]{0,16})\([\s\S]*?\)\3"
   |(?:u8|[uUL])?"(?:\\[\s\S]|[^"\\\n])*"?
   |(?:u8|[uUL])?'(?:\\[\s\S]|[^'\\\n])*'?
   |\\\r?\n
   |[A-Za-z_$][\w$]*
   |[^\n]
   |\Z
    )
    """,
    re.X,
)
# A token's kind from its first character; '?': the rest of it decides (see _kind_of).
_FIRST = {**dict.fromkeys("ABCDEFGHIJKMNOPQSTVWXYZabcdefghijklmnopqrstvwxyz_$", "id"),
          **dict.fromkeys("0123456789", "num"), **dict.fromkeys("uULR./\\", "?"),
          **dict.fromkeys("(){}[],;=*&<>+-!~?:|^%#@`", "punct"),
          '"': "str", "'": "chr", "\n": "nl"}
_STATE = {"#", "<<<", ">>>"}
_INCLUDES = {"include", "include_next", "import"}


def _kind_of(tok: str) -> str:
    """The kind of a token whose first character leaves it open."""
    first = tok[0]
    if first in "uULR":
        if '"' in tok or "'" in tok:  # an identifier never holds a quote: a literal with a prefix
            quote = min(i for i in (tok.find('"'), tok.find("'")) if i >= 0)
            return "str" if tok[quote] == '"' else "chr"
        return "id"
    if first == ".":
        return "punct" if tok in (".", "...") else "num"
    if first == "/":
        return "comment" if tok[:2] in ("//", "/*") else "punct"
    if first == "\\":
        return "cont" if len(tok) > 1 else "punct"
    return "num" if first.isdecimal() else "punct"  # `\d` takes any Unicode decimal digit


def lex_file(text: str) -> list[Token] | None:
    """lex(text) for a whole file, or None where only lex gets it right."""
    lexed = lex_columns(text)
    return lexed[0] if lexed else None


def lex_columns(text: str) -> tuple[list[Token], list[str], list[str], list[int]] | None:
    """lex_file's tokens with their kinds and texts as lists, and the indices of the
    directives (pp tokens): the columns the translation and the hazard scan filter on."""
    if _lexc is not None:
        return _lexc.lex(text, 0, 1, False, True, 0)[:4]
    collecting = gc.isenabled()
    gc.disable()  # tokens are tuples of strings and ints: no cycles to find while 20,000 are made
    try:
        return _lex_columns(text)
    finally:
        if collecting:
            gc.enable()


def _lex_columns(text: str) -> tuple[list[Token], list[str], list[str], list[int]] | None:
    parts = _SPLIT.split(text)
    blanks, texts = parts[1::4], parts[2::4]
    while texts and not texts[-1]:
        texts.pop()  # the empty match at the end
    n = len(texts)
    kinds = list(map(_FIRST.get, map(itemgetter(0), texts)))
    for i in compress(range(n), map(_OPEN.__contains__, kinds)):
        kinds[i] = _kind_of(texts[i])
    lengths = list(map(len, texts))
    ends = list(accumulate(map(add, map(len, blanks), lengths)))
    starts = list(map(sub, ends, lengths))
    newlines = list(map(_NEWLINE_KINDS.__contains__, kinds))  # True counts 1
    for i in compress(range(n), map(_MULTILINE_KINDS.__contains__, kinds)):  # the few that can hold several
        if kinds[i] == "chr" and "\n" in texts[i]:
            return None  # lex does not count a character literal's escaped newlines
        newlines[i] = texts[i].count("\n")
    lines = list(accumulate(newlines, initial=1))  # lines[k]: the line token k starts on
    special = [i for i in compress(range(n), map(_STATE.__contains__, texts)) if kinds[i] == "punct"]
    replaced = _state(text, kinds, texts, starts, ends, lines, special) if special else {}
    if replaced is None:
        return None
    keep = list(map(_KEPT.__contains__, kinds))  # newlines and continuations go
    out: list[Token] = []
    out_kinds: list[str] = []
    out_texts: list[str] = []
    directives: list[int] = []
    at = 0
    for i in sorted(replaced) + [n]:  # the few tokens a directive or a template closer replaces
        sl = slice(at, i)
        cols = [list(compress(col[sl], keep[sl])) for col in (kinds, texts, starts, ends, lines)]
        out.extend(map(tuple.__new__, repeat(Token), zip(*cols, repeat(""))))
        out_kinds += cols[0]
        out_texts += cols[1]
        for tok in replaced.get(i, ()):
            if tok.kind == "pp":
                directives.append(len(out))
            out.append(tok)
            out_kinds.append(tok.kind)
            out_texts.append(tok.text)
        at = i + 1
    return out, out_kinds, out_texts, directives


_OPEN = {"?", None}
_NEWLINE_KINDS = {"nl", "cont"}
_MULTILINE_KINDS = {"comment", "str", "chr"}
_KEPT = {"id", "punct", "num", "comment", "str", "chr"}


def _state(text: str, kinds: list[str], texts: list[str], starts: list[int], ends: list[int], lines: list[int],
           special: list[int]) -> dict[int, list[Token]] | None:
    """Directives and launches: {token index: what replaces it}, or None where the result
    would differ from lex's."""
    replaced: dict[int, list[Token]] = {}
    launches = 0
    read_to = -1  # tokens up to here were read into a directive
    for i in special:
        if i <= read_to:
            return None  # a `#`, `<<<` or `>>>` inside a header name
        tok = texts[i]
        if tok == "<<<":
            launches += 1
        elif tok == ">>>":
            if launches:
                launches -= 1
            else:  # `a<b<c<int>>>`: template closers, not a launch
                s, e, line = starts[i], ends[i], lines[i]
                replaced[i] = [Token("punct", ">>", s, s + 2, line), Token("punct", ">", s + 2, e, line)]
        elif _at_line_start(kinds, i):
            last = _directive(text, kinds, texts, starts, ends, lines, i, replaced)
            if last is None:
                return None
            read_to = last
    return replaced


def _at_line_start(kinds: list[str], i: int) -> bool:
    """A `#` begins a directive when only comments and line continuations stand between it
    and the previous newline (or the start of the file)."""
    j = i - 1
    while j >= 0 and kinds[j] in ("comment", "cont"):
        j -= 1
    return j < 0 or kinds[j] == "nl"


def _directive(text: str, kinds: list[str], texts: list[str], starts: list[int], ends: list[int],
               lines: list[int], i: int, replaced: dict[int, list[Token]]) -> int | None:
    """Merge the `#` at i with its name (and an #include's header name, read whole): the
    index of the last token it takes, or None where the tokens do not line up with lex's."""
    nm = _DIRECTIVE_NAME.match(text, ends[i])
    name, end = nm.group(1) or "", nm.end()
    n = len(texts)
    last = i
    if name:
        if i + 1 >= n or kinds[i + 1] != "id" or starts[i + 1] != nm.start(1) or ends[i + 1] != end:
            return None
        last = i + 1
    elif i + 1 < n and starts[i + 1] < end:
        return None
    new = [Token("pp", "#" + name, starts[i], end, lines[i])]
    if name in _INCLUDES:
        hm = _HEADER.match(text, end)
        if hm:
            stop = hm.end()
            k = last + 1
            while k < n and starts[k] < stop:
                if ends[k] > stop or "\n" in texts[k] or kinds[k] == "cont":
                    return None
                k += 1
            new.append(Token("header", hm.group(1), hm.start(1), hm.end(1), lines[i]))
            last = k - 1
    replaced[i] = new
    for k in range(i + 1, last + 1):
        replaced[k] = []
    return last
