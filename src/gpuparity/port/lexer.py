"""Split CUDA/C++ source into tokens: the hand-written lexer.

Two ways to the same tokens: `lex` walks token by token and places a fragment (a macro body,
the code between tree-sitter's regions) inside its file; `lex_file` lexes a whole file at the
regex engine's speed, building the columns (kind, text, offsets, line) with map/accumulate/
compress, which run in C, and looking one by one only at the few tokens that change the
lexer's state: a `#` that starts a directive (merged with its name, an #include's header name
read whole), and `<<<` / `>>>` (a `>>>` with no open launch is two template closers). Where
`lex_file` cannot be sure to match `lex` (a header name that straddles tokens, a character
literal spanning lines, ...) it returns None and the caller uses `lex`.

Whitespace is not kept: the text between two tokens is copied through unchanged.
"""

from __future__ import annotations

import re
from itertools import accumulate, compress, repeat
from operator import attrgetter
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



# ---------------------------------------------------------------- a whole file at once

# _LEX's alternatives, in an order that fails fewer branches per token: identifiers
# first (unless a quote follows: u8"..", L'x', R"(..)" are literals; the lookahead refuses a
# shorter identifier too), then the common punctuation (none of it can start a comment,
# literal or number), then the rest in _LEX's order; `id2`/`punct2` take what is left.
_FAST = re.compile(
    r"""
    [ \t\r\f\v]*
    (?:
    (?P<id>[A-Za-z_$][\w$]*)(?![\w$"'])
   |(?P<punct><<<|>>>|->\*?|::|\.\.\.|<<=|>>=|<=>|[-+*/%&|^!=<>]=|<<|>>|&&|\|\||\+\+|--|\#\#
      |[(){}\[\],;=*&<>+\-!~?:|^%]|\.(?!\d))
   |(?P<nl>\n)
   |(?P<num>\.?\d(?:[eEpP][+-]|'?[\w.])*)
   |(?P<comment>//(?:\\\r?\n|[^\n])*|/\*[\s\S]*?(?:\*/|\Z))
   |(?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\([\s\S]*?\)(?P=delim)")
   |(?P<str>(?:u8|[uUL])?"(?:\\[\s\S]|[^"\\\n])*"?)
   |(?P<chr>(?:u8|[uUL])?'(?:\\[\s\S]|[^'\\\n])*'?)
   |(?P<cont>\\\r?\n)
   |(?P<id2>[A-Za-z_$][\w$]*)
   |(?P<punct2>[^\n])
   |\Z
    )
    """,
    re.X,
)
_KIND = {"id": "id", "id2": "id", "punct": "punct", "punct2": "punct", "num": "num", "comment": "comment",
         "raw": "str", "str": "str", "chr": "chr", "nl": "", "cont": ""}
_STATE = {"#", "<<<", ">>>"}
_INCLUDES = {"include", "include_next", "import"}
_lastgroup = attrgetter("lastgroup")


def lex_file(text: str) -> list[Token] | None:
    """lex(text) for a whole file, or None where only lex gets it right."""
    ms = list(_FAST.finditer(text))
    while ms and ms[-1].lastgroup is None:
        ms.pop()  # trailing blanks, or the empty match at the end
    groups = list(map(_lastgroup, ms))
    texts = list(map(re.Match.group, ms, groups))
    ends = list(map(re.Match.end, ms))
    newlines = list(map(str.count, texts, repeat("\n")))
    if "chr" in groups and any(newlines[i] for i, g in enumerate(groups) if g == "chr"):
        return None  # lex does not count a character literal's escaped newlines
    lines = accumulate(newlines, initial=1)  # the line each token starts on
    kinds = list(map(_KIND.__getitem__, groups))  # '' for newlines and continuations: dropped
    starts = map(int.__sub__, ends, map(len, texts))
    tokens = list(map(tuple.__new__, repeat(Token), zip(kinds, texts, starts, ends, lines, repeat(""))))
    special = [i for i in compress(range(len(texts)), map(_STATE.__contains__, texts)) if groups[i][0] == "p"]
    replaced = _state(text, tokens, groups, special) if special else {}
    if replaced is None:
        return None
    out: list[Token] = []
    at = 0
    for i in sorted(replaced):  # the few tokens a directive or a template closer replaces
        out.extend(compress(tokens[at:i], kinds[at:i]))
        out.extend(replaced[i])
        at = i + 1
    out.extend(compress(tokens[at:], kinds[at:]))
    return out


def _state(text: str, tokens: list[Token], groups: list[str], special: list[int]) -> dict[int, list[Token]] | None:
    """Directives and launches: {token index: what replaces it}, or None where the result
    would differ from lex's."""
    replaced: dict[int, list[Token]] = {}
    launches = 0
    read_to = -1  # tokens up to here were read into a directive
    for i in special:
        if i <= read_to:
            return None  # a `#`, `<<<` or `>>>` inside a header name
        tok = tokens[i]
        if tok.text == "<<<":
            launches += 1
        elif tok.text == ">>>":
            if launches:
                launches -= 1
            else:  # `a<b<c<int>>>`: template closers, not a launch
                s, e, line = tok.start, tok.end, tok.line
                replaced[i] = [Token("punct", ">>", s, s + 2, line), Token("punct", ">", s + 2, e, line)]
        elif _at_line_start(groups, i):
            last = _directive(text, tokens, groups, i, replaced)
            if last is None:
                return None
            read_to = last
    return replaced


def _at_line_start(groups: list[str], i: int) -> bool:
    """A `#` begins a directive when only comments and line continuations stand between it
    and the previous newline (or the start of the file)."""
    j = i - 1
    while j >= 0 and groups[j] in ("comment", "cont"):
        j -= 1
    return j < 0 or groups[j] == "nl"


def _directive(text: str, tokens: list[Token], groups: list[str], i: int,
               replaced: dict[int, list[Token]]) -> int | None:
    """Merge the `#` at i with its name (and an #include's header name, read whole): the
    index of the last token it takes, or None where the tokens do not line up with lex's."""
    hash_tok = tokens[i]
    nm = _DIRECTIVE_NAME.match(text, hash_tok.end)
    name, end = nm.group(1) or "", nm.end()
    n = len(tokens)
    last = i
    if name:
        if i + 1 >= n or groups[i + 1] not in ("id", "id2") or tokens[i + 1].start != nm.start(1) \
                or tokens[i + 1].end != end:
            return None
        last = i + 1
    elif i + 1 < n and tokens[i + 1].start < end:
        return None
    new = [Token("pp", "#" + name, hash_tok.start, end, hash_tok.line)]
    if name in _INCLUDES:
        hm = _HEADER.match(text, end)
        if hm:
            stop = hm.end()
            k = last + 1
            while k < n and tokens[k].start < stop:
                if tokens[k].end > stop or "\n" in tokens[k].text or groups[k] == "cont":
                    return None
                k += 1
            new.append(Token("header", hm.group(1), hm.start(1), hm.end(1), hash_tok.line))
            last = k - 1
    replaced[i] = new
    for k in range(i + 1, last + 1):
        replaced[k] = []
    return last
