"""The one validation layer for everything that comes from outside: files, YAML, server
responses, CLI and environment values. Parsers use these helpers before anything is used or
stored; every failure is a one-line UserError (exit 2), never a traceback.

- Reads are bounded by the bytes actually read (not by `getsize`, which /dev/zero, pipes and
  growing files defeat); gzip is bounded by the decompressed bytes.
- YAML is composed first and rejected when its alias expansion or nesting is too large, before
  any Python object is built (alias bombs, deep nesting).
- Structured documents are checked with pydantic models (`parse`): types, ranges, finite
  numbers, sizes; the first problem is reported with its location.
- Text shown to a terminal or written into Markdown goes through `terminal_safe` /
  `markdown_safe`, so data cannot move the cursor, inject headings, links or raw HTML.

Import-light: pydantic is imported only by `parse`.
"""

from __future__ import annotations

import gzip
import io
import math
import os
import re
from contextlib import contextmanager
from typing import Any, Iterator

from gpuparity.errors import UserError

MiB = 2**20
DEFAULT_FILE_LIMIT = 256 * MiB
MAX_DEPTH = 64                 # nesting of JSON / YAML containers
MAX_YAML_NODES = 200_000       # nodes after alias expansion
MAX_TEXT = 10_000              # characters of one free-text field (ids, labels, notes)


# -- bounded reads ---------------------------------------------------------------------------
def file_limit(default: int = DEFAULT_FILE_LIMIT) -> int:
    """GPUPARITY_MAX_IMPORT_BYTES overrides the byte limit of every imported file."""
    return env_int("GPUPARITY_MAX_IMPORT_BYTES", default, lo=1)


def open_regular(path: str, what: str = "file"):
    """The file opened for binary reading, refused (one line) unless it is a regular file: a FIFO,
    a socket or a device (/dev/null, /dev/zero) is never read, and opening never blocks (O_NONBLOCK,
    then fstat on what was opened, so nothing can be swapped in between)."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except IsADirectoryError:
        raise UserError(f"{path}: is a folder, not a {what}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise UserError(f"{path}: is a folder, not a {what}")
        if not stat.S_ISREG(mode):
            raise UserError(f"{path}: not a regular file (a pipe, socket or device): give a {what} on disk")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_regular(path: str, what: str = "file") -> str:
    """Refuse (one line) a path that is missing, a folder or not a regular file; returns it."""
    open_regular(path, what).close()
    return path


def read_bounded(path: str, limit: int | None = None, what: str = "file") -> bytes:
    """The file's bytes, decompressed if it is gzip, refusing more than `limit` bytes read; only a
    regular file is read (open_regular)."""
    limit = file_limit() if limit is None else limit
    try:
        with open_regular(path, what) as fh:
            head = fh.read(2)
            fh.seek(0)
            if head == b"\x1f\x8b":
                return _read_capped(gzip.GzipFile(fileobj=fh), limit, path, what, "decompressed ")
            return _read_capped(fh, limit, path, what, "")
    except IsADirectoryError:
        raise UserError(f"{path}: is a folder, not a {what}") from None
    except (gzip.BadGzipFile, EOFError, OSError) as exc:
        if isinstance(exc, UserError):
            raise
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        raise UserError(f"{path}: cannot read {what} ({detail})") from None


def _read_capped(stream: io.BufferedIOBase, limit: int, path: str, what: str, kind: str) -> bytes:
    chunks, total = [], 0
    while True:
        chunk = stream.read(min(4 * MiB, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise UserError(f"{path}: {kind}{what} is over the {limit}-byte limit")


def decode_text(data: bytes, origin: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{origin}: not UTF-8 text") from None


def load_json(path: str, limit: int | None = None, what: str = "JSON file") -> Any:
    """Parse a bounded JSON file (gzip allowed); NaN/Infinity literals and deep nesting refused."""
    return parse_json(read_bounded(path, limit, what), path)


def parse_json(data: bytes | str, origin: str) -> Any:
    import json

    def no_constants(name: str):
        raise ValueError(f"{name} is not a JSON number")

    text = decode_text(data, origin) if isinstance(data, bytes) else data
    try:
        obj = json.loads(text, parse_constant=no_constants)
    except RecursionError:
        raise UserError(f"{origin}: nested deeper than this reader allows") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{origin}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except ValueError as exc:
        raise UserError(f"{origin}: not valid JSON ({exc})") from None
    check_depth(obj, origin)
    return obj


def check_depth(obj: Any, origin: str, limit: int = MAX_DEPTH) -> None:
    """Refuse containers nested deeper than `limit` (iterative: no recursion limit to hit)."""
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth > limit:
                raise UserError(f"{origin}: nested deeper than {limit} levels")
            children = node.values() if isinstance(node, dict) else node
            stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))


# -- YAML ------------------------------------------------------------------------------------
def load_yaml(text: str, origin: str, max_nodes: int = MAX_YAML_NODES, max_depth: int = MAX_DEPTH) -> Any:
    """Safe YAML with alias expansion and nesting bounded before any object is constructed."""
    import yaml

    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        loader = loader_cls(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_yaml_node(node, origin, max_nodes, max_depth)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except UserError:
        raise
    except RecursionError:
        raise UserError(f"{origin}: YAML nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UserError(f"{origin}: not valid YAML{where}: {problem}") from None
    except (ValueError, TypeError, OverflowError) as exc:   # e.g. a timestamp out of range
        raise UserError(f"{origin}: YAML value not readable: {str(exc).splitlines()[0][:200]}") from None


def _check_yaml_node(root, origin: str, max_nodes: int, max_depth: int) -> None:
    """Count nodes as they would be expanded (aliases share nodes) and the nesting depth,
    iteratively, memoising each node's expanded size so a bomb is measured without expanding it."""
    import yaml

    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(root, False)]
    on_path: set[int] = set()
    while stack:
        node, done = stack.pop()
        nid = id(node)
        if done:
            on_path.discard(nid)
            kids = _yaml_children(node)
            size[nid] = 1 + sum(size[id(k)] for k in kids)
            depth[nid] = 1 + max((depth[id(k)] for k in kids), default=0)
            if size[nid] > max_nodes:
                raise UserError(f"{origin}: YAML expands to more than {max_nodes} nodes (aliases?)")
            if depth[nid] > max_depth:
                raise UserError(f"{origin}: YAML nested deeper than {max_depth} levels")
            continue
        if nid in size:
            continue
        if nid in on_path:
            raise UserError(f"{origin}: YAML refers to itself (recursive alias)")
        on_path.add(nid)
        stack.append((node, True))
        if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)):
            stack.extend((k, False) for k in _yaml_children(node) if id(k) not in size)
        if len(on_path) > max_depth + 1:
            raise UserError(f"{origin}: YAML nested deeper than {max_depth} levels")


def _yaml_children(node) -> list:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [x for pair in node.value for x in pair]
    return []


# -- structured documents (pydantic) -----------------------------------------------------------
def parse(model, data: Any, origin: str):
    """Validate `data` against a pydantic model; the first error becomes one line with its path."""
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "top level"
        raise UserError(f"{origin}: {where}: {err.get('msg', 'invalid')}"[:500]) from None
    except RecursionError:
        raise UserError(f"{origin}: nested deeper than this reader allows") from None


def finite(value: float, name: str = "value") -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number")
    return float(value)


_BAD_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(value: str, name: str = "text", max_len: int = MAX_TEXT) -> str:
    """A free-text field: bounded length, no NUL or other control characters but tab and newline."""
    if len(value) > max_len:
        raise ValueError(f"{name} is longer than {max_len} characters")
    if _BAD_CHARS.search(value):
        raise ValueError(f"{name} holds control characters")
    return value


# -- environment and CLI values ----------------------------------------------------------------
def env_int(name: str, default: int, lo: int | None = None, hi: int | None = None) -> int:
    return _env_number(name, default, int, "an integer", lo, hi)


def env_float(name: str, default: float, lo: float | None = None, hi: float | None = None) -> float:
    return _env_number(name, default, float, "a finite number", lo, hi)


def _env_number(name: str, default, kind, what: str, lo, hi):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = kind(raw.strip())
    except ValueError:
        value = None
    if value is None or not math.isfinite(value):
        raise UserError(f"environment variable {name}={raw[:40]!r} is not {what}")
    return check_range(value, name, lo, hi)


def iso_date(text: str | None, option: str = "--since") -> str | None:
    """An ISO date (or date and time) as given, or a one-line error naming the option."""
    if text is None:
        return None
    from datetime import datetime

    try:
        datetime.fromisoformat(text.strip())
    except ValueError:
        raise UserError(f"{option} '{terminal_safe(text)[:40]}' is not an ISO date (e.g. 2025-06-01)") from None
    return text.strip()


def check_output_file(path: str | None, option: str, protect: list[tuple[str, str]] = (),
                      trees: list[str] = ()) -> None:
    """The one output guard, before any work: a file to write is a regular file or a new name in an
    existing, writable folder ('-' is stdout), and never, by any alias (`..`, a symlink, a hard
    link: the real path or the same inode), one of `protect` ((what, path): the store and its
    -wal/-shm/-journal files, the command's inputs) nor a file inside one of `trees` (a port
    source tree). A FIFO or a device would block or swallow the output: refused. Nothing is
    created here; write_file then writes beside the target and renames."""
    import stat

    if not path or str(path) == "-":
        return
    path = str(path)
    shown = f"{option} {terminal_safe(path)}"
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as exc:
        raise UserError(f"{shown}: cannot write ({exc.strerror or exc})") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UserError(f"{shown}: is a folder")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise UserError(f"{shown}: not a regular file (a pipe or device): give a file name")
    real = os.path.realpath(path)
    folder = os.path.dirname(real) or "."
    if not os.path.isdir(folder):
        raise UserError(f"{shown}: folder {terminal_safe(folder)} does not exist")
    if not os.access(folder, os.W_OK) or (st is not None and not os.access(path, os.W_OK)):
        raise UserError(f"{shown}: not writable")
    for what, other in protect:
        if other and _same_file(real, st, str(other)):
            raise UserError(f"{shown}: is {what}: refusing to write over it")
    for tree in trees:
        root = os.path.realpath(str(tree))
        inside = real == root or real.startswith(root.rstrip(os.sep) + os.sep)
        if inside or (st is not None and (st.st_dev, st.st_ino) in _tree_files(root)):
            raise UserError(f"{shown}: is a file of the source tree {terminal_safe(tree)}: write reports "
                            "outside it")


def _same_file(real: str, st, other: str) -> bool:
    """Whether a target (its real path, its stat or None) is `other`: the same real path, the same
    file under another name (a hard link), or the same name in the same folder reached another
    way (a bind mount of the folder: a -wal file that does not exist yet is still the store's)."""
    if os.path.realpath(other) == real:
        return True
    if os.path.basename(real) == os.path.basename(os.path.realpath(other)) and same_folder(
            os.path.dirname(real), os.path.dirname(os.path.realpath(other))):
        return True
    if st is None:
        return False
    try:
        o = os.stat(other)
    except OSError:
        return False
    return (o.st_dev, o.st_ino) == (st.st_dev, st.st_ino)


def same_file(path: str, other: str) -> bool:
    """Whether `path` (existing or not) is `other` by any alias (see _same_file)."""
    try:
        st = os.stat(path)
    except OSError:
        st = None
    return _same_file(os.path.realpath(path), st, other)


def same_folder(a: str, b: str) -> bool:
    """Whether two folder names are one folder: the same real path, or the same device and inode
    (a bind mount shows one folder under two paths that realpath cannot join)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        x, y = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (x.st_dev, x.st_ino) == (y.st_dev, y.st_ino)


def _tree_files(root: str) -> set[tuple[int, int]]:
    """(device, inode) of every file under root (or of root, a file): a hard link to one of them
    is that file."""
    out = set()
    walk = os.walk(root) if os.path.isdir(root) else [(os.path.dirname(root), [], [os.path.basename(root)])]
    for folder, _, names in walk:
        for name in names:
            try:
                st = os.stat(os.path.join(folder, name))
            except OSError:
                continue
            out.add((st.st_dev, st.st_ino))
    return out


def write_file(path: str, data: str | bytes, mode: int | None = None) -> str:
    """Write a file whole or not at all (see `replacing`). Returns the path written."""
    with replacing(path, mode) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
    return os.path.realpath(path)


@contextmanager
def replacing(path: str, mode: int | None = None) -> Iterator[str]:
    """A temporary name beside the target to write, renamed over the target when the block ends
    (a failed or interrupted write leaves the old file, or none, never half of one; a hard link
    is replaced, never written through; a symlink is followed: the file it names is replaced).
    mode: the new file's permissions (default: the old file's, else 0666 less the umask)."""
    import tempfile

    real = os.path.realpath(path)
    folder, name = os.path.split(real)
    if mode is None:
        try:
            mode = os.stat(real).st_mode & 0o7777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(prefix=f".{name[:80]}.", suffix=".part", dir=folder or ".")
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


# -- secrets and text from the command line ------------------------------------------------------
_URL_PASSWORD = re.compile(r"(://[^:/@\s\"']*:)[^\s\"']*@")     # greedy: a password may hold @ or /
_QUERY_PASSWORD = re.compile(r"([?&](?:ssl)?password=)[^&\s\"']*", re.IGNORECASE)


def mask_secrets(text: Any) -> str:
    """Text with every URL password shown as ***: scheme://user:***@host and ?password=***. What
    keeps or prints a store URL (run documents' argv, list headers, errors) goes through it."""
    s = str(text)
    if "://" not in s and "password=" not in s.lower():
        return s
    return _QUERY_PASSWORD.sub(r"\1***", _URL_PASSWORD.sub(r"\1***@", s))


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_utf8(value: str, what: str) -> str:
    """Text from outside must be valid UTF-8: a byte that is not (the system hands it over as a
    lone surrogate) is refused, never stored or printed half-way."""
    if _SURROGATE.search(value):
        raise UserError(f"{what} is not valid UTF-8 text ({ascii(value)[1:-1][:60]}): gpuparity takes UTF-8 "
                        "names and values")
    return value


def check_range(value, name: str, lo=None, hi=None):
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        span = f"{lo if lo is not None else '-inf'}..{hi if hi is not None else 'inf'}"
        raise UserError(f"{name}={value} is out of range ({span})")
    return value


# -- text for terminals and Markdown ------------------------------------------------------------
# C0 and C1 controls, DEL, and the Unicode format characters that reorder or break what a terminal
# shows (bidi embeddings, overrides and isolates, marks, line and paragraph separators).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: Any) -> str:
    """A string fit for a terminal line: control characters (ESC, CR, newline, C1) and bidi
    controls shown as escapes (\\x1b, \\u202e), so data can neither move the cursor nor reorder
    what is shown. Every writer of document or file text to a terminal uses it (cli.common.escape)."""
    s = str(text)
    return _CONTROL.sub(lambda m: ascii(m.group())[1:-1], s) if _CONTROL.search(s) else s


# A cell a spreadsheet reads as a formula (=, +, -, @; tab, CR and LF, which some strip first); a
# plain number (-5, +1.5e3) is left as it is: it is read as that number.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def spreadsheet_safe(value: Any) -> Any:
    """A CSV cell that a spreadsheet shows as text, never runs: text that starts like a formula gets
    a leading ' (the quote spreadsheets take for 'text', OWASP's advice on CSV injection); numbers,
    and text that is a plain number, stay as they are. A CR inside text becomes a line break
    (LF): the csv module quotes a cell with LF but writes a lone CR bare, which readers take as
    the end of the row (the rest of the cell would start a row of its own). Every CSV writer's
    cells go through it."""
    if not isinstance(value, str):
        return value
    value = value.replace("\r\n", "\n").replace("\r", "\n")
    if value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~&])")   # with [ ] escaped, ( ) and ! cannot form a link


def markdown_safe(text: Any, max_len: int = 2000) -> str:
    """Data as literal Markdown inline text, for headings, table cells and paragraphs alike: the
    punctuation Markdown or HTML could act on is backslash-escaped, so no heading, emphasis, code,
    table break, raw HTML (<img onerror>), entity, link or image ([x](javascript:..)) can form;
    line breaks become spaces and controls (bidi included) are dropped. Only what a renderer
    autolinks by itself (a bare http(s):// or www. address, GitHub's extension) stays a link."""
    s = re.sub(r"[\r\n\t]+", " ", str(text)[:max_len])
    s = _CONTROL.sub("", s)
    return _MD_SPECIAL.sub(r"\\\1", s)
