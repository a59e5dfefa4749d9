"""Split CUDA/C++ source into tokens so that translation and hazard rules see code, not text,
and the token queries the rules share (a call's arguments, a launch's configuration).

Two engines produce the same token list: the hand-written lexer (lexer.py) and tree-sitter
with the CUDA grammar (tree_sitter_lex.py), whose parse decides which text is a comment, a
string or character literal, a header name or a macro body. `auto` lexes, and asks
tree-sitter only where the lexer met a literal or comment it could not close: where
tree-sitter parses, the two agreed token for token on every file of the test corpora
(HIPIFY's tests, the samples), and its parse alone costs twice the whole lexer.
"""

from __future__ import annotations

import re
from itertools import compress
from operator import itemgetter
from typing import NamedTuple

from gpuparity.port.lexer import Token, lex, lex_columns
from gpuparity.port.tree_sitter_lex import lex_tree_sitter, tree_sitter_available

__all__ = ["Scanned", "Token", "call_args", "int_value", "launch_config", "lex", "scan", "tag_directives",
           "tokenize", "tree_sitter_available"]


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


def tag_directives(text: str, tokens: list[Token], directives: list[int] | None = None) -> list[Token]:
    """Mark each token that sits on a preprocessor line with that directive's name
    (directives: the indices of the pp tokens, when the lexer knows them)."""
    out = tokens
    i, n = 0, len(tokens)
    if directives is None:
        directives = list(compress(range(n), map("pp".__eq__, map(_kind, tokens))))
    for p in directives:  # only directives' lines are walked
        if p < i:
            continue  # inside the previous directive's line
        i = p
        name = tokens[i].text[1:] or "null"
        stop = _logical_line_end(text, tokens[i].start)
        while i < n and tokens[i].start < stop:
            if tokens[i].kind == "comment" and tokens[i].end > stop:
                stop = _logical_line_end(text, tokens[i].end)
            out[i] = tokens[i]._replace(directive=name)
            i += 1
    return out


_kind = itemgetter(0)


class Scanned(NamedTuple):
    """A source's tokens, the engine that made them, and their kinds and texts as lists."""
    tokens: list[Token]
    engine: str
    kinds: list[str]
    texts: list[str]


def tokenize(text: str, engine: str = "auto") -> tuple[list[Token], str]:
    """Tokens of a C/C++/CUDA source and the engine that produced them ('tree-sitter'|'lexer')."""
    scanned = scan(text, engine)
    return scanned.tokens, scanned.engine


def scan(text: str, engine: str = "auto") -> Scanned:
    """tokenize, with the token columns.

    auto: the lexer, unless it met a literal or comment it could not close (the one place it
    guesses); there tree-sitter's parse decides, when it parses. Where tree-sitter parses, the
    two agreed token for token on every file of the test corpora (HIPIFY's tests, the samples),
    and tree-sitter's parse alone costs twice the lexer."""
    if engine == "tree-sitter":
        tokens = lex_tree_sitter(text)
        if tokens is not None:
            return _columns(text, tokens, "tree-sitter")
    lexed = lex_columns(text)
    if lexed is None:
        return _columns(text, lex(text), "lexer")
    tokens, kinds, texts, directives = lexed
    if engine == "auto" and _guessed(kinds, texts):
        tree = lex_tree_sitter(text)
        if tree is not None:
            return _columns(text, tree, "tree-sitter")
    return Scanned(tag_directives(text, tokens, directives), "lexer", kinds, texts)


def _columns(text: str, tokens: list[Token], engine: str) -> Scanned:
    return Scanned(tag_directives(text, tokens), engine, list(map(_kind, tokens)), list(map(_text, tokens)))


_text = itemgetter(1)
_CLOSED = {"str": re.compile(r'(?:u8|[uUL])?(?:R".*|"(?:\\[\s\S]|[^"\\\n])*")', re.S),
           "chr": re.compile(r"(?:u8|[uUL])?'(?:\\[\s\S]|[^'\\\n])*'"),
           "comment": re.compile(r"//.*|/\*.*\*/", re.S)}


def _guessed(kinds: list[str], texts: list[str]) -> bool:
    """A string or character literal cut at its line's end, or a block comment at the file's."""
    return any(_CLOSED[kinds[i]].fullmatch(texts[i]) is None
               for i in compress(range(len(kinds)), map(_CLOSED.__contains__, kinds)))


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
