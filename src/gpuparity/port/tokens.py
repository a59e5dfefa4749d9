"""Split CUDA/C++ source into tokens so that translation and hazard rules see code, not text.

Two engines produce the same token list:
- tree-sitter with the CUDA grammar (preferred): its leaves give identifiers, comments and
  string literals exactly; macro bodies (opaque `preproc_arg` leaves) are split by the lexer.
- a hand-written lexer, used when tree-sitter is missing or reports a parse error (code
  full of macros often does not parse as C++), so a file is never translated blindly.

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


_LEX = re.compile(
    r"""
    (?P<nl>\n)
   |(?P<ws>[ \t\r\f\v]+|\\\r?\n)
   |(?P<comment>//(?:\\\r?\n|[^\n])*|/\*[\s\S]*?(?:\*/|\Z))
   |(?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\([\s\S]*?\)(?P=delim)")
   |(?P<str>(?:u8|[uUL])?"(?:\\[\s\S]|[^"\\\n])*"?)
   |(?P<num>\.?\d(?:[eEpP][+-]|'?[\w.])*)
   |(?P<chr>(?:u8|[uUL])?'(?:\\[\s\S]|[^'\\\n])*'?)
   |(?P<id>[A-Za-z_$][\w$]*)
   |(?P<punct><<<|>>>|->\*?|::|\.\.\.|<<=|>>=|<=>|[-+*/%&|^!=<>]=|<<|>>|&&|\|\||\+\+|--|\#\#|\S)
    """,
    re.X,
)
_HEADER = re.compile(r"[ \t]*(<[^>\n]*>|\"[^\"\n]*\")")
_DIRECTIVE_NAME = re.compile(r"[ \t]*([A-Za-z_]\w*)?")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*\Z")
_KIND = {"comment": "comment", "raw": "str", "str": "str", "num": "num", "chr": "chr",
         "id": "id", "punct": "punct"}


def lex(text: str, base: int = 0, line: int = 1, in_directive: bool = False) -> list[Token]:
    """Hand-written lexer. `base`/`line` place a fragment (a macro body) inside its file."""
    out: list[Token] = []
    append = out.append
    at_line_start = not in_directive
    open_launches = 0
    pos = 0
    n = len(text)
    while pos < n:
        m = _LEX.match(text, pos)
        group = m.lastgroup
        end = m.end()
        if group == "nl":
            line += 1
            at_line_start = not in_directive
            pos = end
            continue
        if group == "ws":
            if end - pos > 1 and text[end - 1] == "\n":
                line += 1
            pos = end
            continue
        tok_text = m.group()
        if group == "punct" and tok_text == "#" and at_line_start:
            nm = _DIRECTIVE_NAME.match(text, end)
            end = nm.end()
            name = nm.group(1) or ""
            append(Token("pp", "#" + name, base + pos, base + end, line))
            if name in ("include", "include_next", "import"):
                hm = _HEADER.match(text, end)
                if hm:
                    append(Token("header", hm.group(1), base + hm.start(1), base + hm.end(1), line))
                    end = hm.end()
            at_line_start = False
            pos = end
            continue
        kind = _KIND[group]
        if kind == "punct":
            if tok_text == "<<<":
                open_launches += 1
            elif tok_text == ">>>":
                if open_launches:
                    open_launches -= 1
                else:  # `a<b<c<int>>>`: template closers, not a launch
                    append(Token("punct", ">>", base + pos, base + pos + 2, line))
                    append(Token("punct", ">", base + pos + 2, base + end, line))
                    at_line_start = False
                    pos = end
                    continue
        append(Token(kind, tok_text, base + pos, base + end, line))
        if kind != "comment":
            at_line_start = False
        if group in ("comment", "raw", "str"):
            line += tok_text.count("\n")
        pos = end
    return out


# ---------------------------------------------------------------- tree-sitter engine

_ATOMIC = {
    "comment": "comment",
    "string_literal": "str",
    "raw_string_literal": "str",
    "char_literal": "chr",
    "system_lib_string": "header",
    "number_literal": "num",
    "preproc_arg": "",  # split again by the lexer
}
_WHITESPACE_GAP = re.compile(r"(?:\s|\\\r?\n)*\Z")


@lru_cache(maxsize=1)
def _parser():
    try:
        import tree_sitter_cuda
        from tree_sitter import Language, Parser
    except Exception:
        return None
    try:
        return Parser(Language(tree_sitter_cuda.language()))
    except Exception:
        return None


def tree_sitter_available() -> bool:
    return _parser() is not None


def _char_offsets(text: str) -> list[int] | None:
    """Byte offset -> character offset table, only needed for non-ASCII files."""
    if text.isascii():
        return None
    table: list[int] = []
    for i, ch in enumerate(text):
        table.extend([i] * len(ch.encode("utf-8")))
    table.append(len(text))
    return table


def lex_tree_sitter(text: str) -> list[Token] | None:
    """Tokens from tree-sitter leaves, or None when the grammar cannot parse the file cleanly."""
    parser = _parser()
    if parser is None:
        return None
    data = text.encode("utf-8")
    tree = parser.parse(data)
    root = tree.root_node
    if root.has_error:
        return None
    offsets = _char_offsets(text)
    out: list[Token] = []
    cursor = tree.walk()
    prev_end = 0
    while True:
        node = cursor.node
        ntype = node.type
        atomic = _ATOMIC.get(ntype)
        if atomic is not None or node.child_count == 0:
            sb, eb = node.start_byte, node.end_byte
            if sb < eb:
                s, e = (offsets[sb], offsets[eb]) if offsets else (sb, eb)
                gap = text[prev_end:s]
                if gap and not _WHITESPACE_GAP.match(gap):
                    return None  # tree-sitter skipped text: do not trust it
                line = node.start_point[0] + 1
                piece = text[s:e]
                if atomic == "":
                    out.extend(lex(piece, base=s, line=line, in_directive=True))
                elif atomic:
                    if atomic == "str" and node.parent is not None and node.parent.type == "preproc_include":
                        atomic = "header"
                    out.append(Token(atomic, piece, s, e, line))
                elif piece[0] == "#":
                    out.append(Token("pp", "#" + piece[1:].strip(), s, e, line))
                elif _IDENT.match(piece):
                    out.append(Token("id", piece, s, e, line))
                elif piece in ("<<<", ">>>"):
                    out.append(Token("punct", piece, s, e, line))
                else:
                    out.extend(lex(piece, base=s, line=line, in_directive=True))
                prev_end = e
            # atomic nodes are not descended into
            if cursor.goto_next_sibling():
                continue
        elif cursor.goto_first_child():
            continue
        elif cursor.goto_next_sibling():
            continue
        while True:
            if not cursor.goto_parent():
                if not _WHITESPACE_GAP.match(text[prev_end:]):
                    return None
                return out
            if cursor.goto_next_sibling():
                break


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
