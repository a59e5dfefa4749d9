"""The tree-sitter engine: tree-sitter with the CUDA grammar decides which text is a comment,
a string or character literal, an #include header or a macro body; the lexer splits the code
between those regions, where identifiers can only be code (a query keeps this in C: walking
every leaf from Python was 5x slower). None where the grammar is missing or the file does not
parse cleanly (code full of macros often does not parse as C++)."""

from __future__ import annotations

from functools import lru_cache

from gpuparity.port.lexer import Token, lex

# Nodes whose text is not code: tree-sitter decides where they start and end (raw strings,
# continued comments, header names, macro bodies); the lexer splits the code between them.
_REGION_QUERY = """
(comment) @comment
(string_literal) @str
(raw_string_literal) @str
(char_literal) @chr
(system_lib_string) @header
(preproc_include path: (string_literal) @header)
(preproc_arg) @body
"""


@lru_cache(maxsize=1)
def _parser():
    try:
        import tree_sitter_cuda
        from tree_sitter import Language, Parser, Query, QueryCursor
    except Exception:
        return None
    try:
        language = Language(tree_sitter_cuda.language())
        return Parser(language), Query(language, _REGION_QUERY), QueryCursor
    except Exception:
        return None


def tree_sitter_available() -> bool:
    return _parser() is not None


def source_bytes(text: str) -> bytes:
    """The bytes a decoded source came from: bytes that were not UTF-8 were decoded as
    surrogate escapes (see walk.py) and go back as they were."""
    return text.encode("utf-8", "surrogateescape")


def _char_offsets(text: str) -> list[int] | None:
    """Byte offset -> character offset table, only needed for non-ASCII files."""
    if text.isascii():
        return None
    table: list[int] = []
    for i, ch in enumerate(text):
        table.extend([i] * len(ch.encode("utf-8", "surrogateescape")))
    table.append(len(text))
    return table


def _at_line_start(text: str, pos: int) -> bool:
    line_start = text.rfind("\n", 0, pos) + 1
    return not text[line_start:pos].strip()


def lex_tree_sitter(text: str) -> list[Token] | None:
    """Tokens with tree-sitter deciding what is comment, string, header and macro body.

    None when the grammar cannot parse the file cleanly; the caller then lexes it alone."""
    engine = _parser()
    if engine is None:
        return None
    parser, query, cursor_type = engine
    tree = parser.parse(source_bytes(text))
    if tree.root_node.has_error:
        return None
    offsets = _char_offsets(text)
    regions: list[tuple[int, int, str, int]] = []
    for name, nodes in cursor_type(query).captures(tree.root_node).items():
        for node in nodes:
            sb, eb = node.start_byte, node.end_byte
            if offsets is not None:
                sb, eb = offsets[sb], offsets[eb]
            regions.append((sb, eb, name, node.start_point[0] + 1))
    # a header's string_literal is captured twice (@str and @header): keep @header
    regions.sort(key=lambda r: (r[0], r[2] != "header"))
    out: list[Token] = []
    pos, line = 0, 1
    launches = [0]
    for start, end, name, start_line in regions:
        if start < pos:
            continue  # nested or duplicate capture
        if start > pos:
            out.extend(lex(text[pos:start], base=pos, line=line, line_start=_at_line_start(text, pos),
                           launches=launches))
        if name == "body":
            out.extend(lex(text[start:end], base=start, line=start_line, in_directive=True))
        else:
            out.append(Token(name, text[start:end], start, end, start_line))
        line = start_line + text.count("\n", start, end)
        pos = end
    if pos < len(text):
        out.extend(lex(text[pos:], base=pos, line=line, line_start=_at_line_start(text, pos),
                       launches=launches))
    return out


