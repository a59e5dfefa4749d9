"""Split CUDA/C++ source into tokens so that translation and hazard rules see code, not text.

Two engines produce the same token list:
- tree-sitter with the CUDA grammar (preferred): its parse decides which text is a comment,
  a string or character literal, an #include header or a macro body; the code between those
  regions, where identifiers can only be code, is split by the lexer (a query keeps this in C:
  walking every leaf from Python was 5x slower).
- the hand-written lexer alone, used when tree-sitter is missing or reports a parse error
  (code full of macros often does not parse as C++), so a file is never translated blindly.

Whitespace is not kept: the text between two tokens is copied through unchanged.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple


class Token(NamedTuple):
    kind: str  # id num str chr comment punct pp header
    text: str
    start: int  # character offsets into the source
    end: int
    line: int  # 1-based line of the first character
    directive: str = ""  # '' in code; else the directive it sits in: include, define, if, pragma ...


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
    """Hand-written lexer. `base`/`line` place a fragment (a macro body) inside its file;
    `line_start` says whether the fragment begins a line (a '#' there starts a directive);
    `launches` carries the count of open `<<<` from one fragment to the next."""
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


# ---------------------------------------------------------------- tree-sitter engine

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


# ---------------------------------------------------------------- shared post-pass

def _logical_line_end(text: str, pos: int) -> int:
    """End of the preprocessor line starting at pos: the first newline not escaped by '\\'."""
    n = len(text)
    while True:
        nl = text.find("\n", pos)
        if nl < 0:
            return n
        back = nl - 1
        if back >= 0 and text[back] == "\r":
            back -= 1
        if back >= 0 and text[back] == "\\":
            pos = nl + 1
            continue
        return nl


def tag_directives(text: str, tokens: list[Token]) -> list[Token]:
    """Mark each token that sits on a preprocessor line with that directive's name."""
    out = tokens
    i, n = 0, len(tokens)
    while i < n:
        tok = tokens[i]
        if tok.kind != "pp":
            i += 1
            continue
        name = tok.text[1:] or "null"
        stop = _logical_line_end(text, tok.start)
        while i < n and tokens[i].start < stop:
            if tokens[i].kind == "comment" and tokens[i].end > stop:
                stop = _logical_line_end(text, tokens[i].end)
            out[i] = tokens[i]._replace(directive=name)
            i += 1
    return out


def tokenize(text: str, engine: str = "auto") -> tuple[list[Token], str]:
    """Tokens of a C/C++/CUDA source and the engine that produced them ('tree-sitter'|'lexer')."""
    tokens = None
    used = "lexer"
    if engine in ("auto", "tree-sitter"):
        tokens = lex_tree_sitter(text)
        if tokens is not None:
            used = "tree-sitter"
    if tokens is None:
        tokens = lex(text)
    return tag_directives(text, tokens), used


def launch_config(toks: list[Token], i: int, limit: int | None = None) -> tuple[list[tuple[int, int]], int | None]:
    """The parts of a `<<<grid, block, shared, stream>>>` whose `<<<` is toks[i]: the (first, last)
    token index of each top-level comma-separated part, and the index of `>>>` (None if unclosed)."""
    depth, parts, cur = 0, [], i + 1
    end = len(toks) if limit is None else min(len(toks), i + limit)
    for j in range(i + 1, end):
        s = toks[j].text
        if s in ("(", "[", "{"):
            depth += 1
        elif s in (")", "]", "}"):
            depth -= 1
        elif s == "," and depth == 0:
            parts.append((cur, j - 1))
            cur = j + 1
        elif s == ">>>" and depth == 0:
            parts.append((cur, j - 1))
            return parts, j
    return parts, None


def call_args(tokens: list[Token], open_idx: int) -> tuple[list[tuple[int, int]], int] | None:
    """Arguments of the call whose '(' is tokens[open_idx]: [(first, last)] token index ranges
    (first > last for an empty argument) and the index of the closing ')'. None if unbalanced."""
    depth = 0
    args: list[tuple[int, int]] = []
    start = open_idx + 1
    for j in range(open_idx, len(tokens)):
        t = tokens[j]
        if t.kind != "punct":
            continue
        s = t.text
        if s in ("(", "[", "{"):
            depth += 1
        elif s in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                if j > start or args:
                    args.append((start, j - 1))
                return args, j
        elif s == "," and depth == 1:
            args.append((start, j - 1))
            start = j + 1
    return None


def int_value(text: str) -> int | None:
    """Value of an integer literal token (0x1f, 32u, 1'024), else None."""
    t = text.replace("'", "").rstrip("uUlLzZ")
    try:
        if t.lower().startswith("0x"):
            return int(t, 16)
        if t.lower().startswith("0b"):
            return int(t[2:], 2)
        if len(t) > 1 and t.startswith("0") and t.isdigit():
            return int(t, 8)
        return int(t)
    except ValueError:
        return None
