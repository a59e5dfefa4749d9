"""Options and output helpers shared by the verbs (import-light)."""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Optional

import typer

DB_HELP = "Store: a SQLite file path or a postgresql:// URL (default: $GPUPARITY_DB or the user data dir)."


# Verbs that only read a store: one that does not exist is an error, never created (results.store.may_create).
READ_VERBS = {"list", "show", "export", "compare", "report", "trend", "claims check", "reference list",
              "reference show", "reference compare"}


def _db_verb(ctx: typer.Context, value: Optional[str]) -> Optional[str]:
    from gpuparity.results.store_connect import may_create
    from gpuparity.results.store_url import check_url

    if value is not None:       # an empty --db, :memory:, a port that is not a number: refused before any work
        check_url(value)

    names, at = [], ctx
    while at.parent is not None:            # the verb's words below the program name: "claims check"
        names.insert(0, at.info_name)
        at = at.parent
    may_create(" ".join(names) not in READ_VERBS)
    at.call_on_close(lambda: may_create(True))     # the root context closes however the command ends
    return value


def db_option() -> Any:
    return typer.Option(None, "--db", help=DB_HELP, envvar="GPUPARITY_DB", show_envvar=False, callback=_db_verb)


def console(stderr: bool = False):
    import os

    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    raw = os.environ.get("COLUMNS", "")
    # A pipe gets COLUMNS (or 160); a value that is not a sane width is ignored, never fatal.
    width = None if stream.isatty() else int(raw) if raw.isdigit() and 20 <= int(raw) <= 100_000 else 160
    return Console(stderr=stderr, highlight=False, soft_wrap=False, width=width)


def _stdlib_json(obj: Any) -> bytes:
    """The same JSON through the standard library (slower): NaN and infinities null, numpy as
    numbers, unknown types str."""
    import json

    from gpuparity.results.schema import finite_json

    def default(value):
        tolist = getattr(value, "tolist", None)       # numpy arrays and scalars
        return finite_json(tolist()) if callable(tolist) else str(value)

    return (json.dumps(finite_json(obj), indent=2, default=default, ensure_ascii=False) + "\n").encode()


def print_json(obj: Any) -> None:
    """Indented JSON on stdout; NaN and infinities become null (strict JSON), unknown types str.
    Without orjson (an image with torch but not gpuparity's dependencies) the standard library
    writes it: a run's measurements are never lost to a missing encoder."""
    try:
        import orjson
    except ImportError:
        orjson = None
    if orjson is None:
        data = _stdlib_json(obj)
    else:
        opts = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE
        try:
            data = orjson.dumps(obj, default=str, option=opts)
        except orjson.JSONEncodeError:          # an integer past 64 bits (a row stored by an earlier version)
            data = _stdlib_json(obj)
    if _UNSAFE_UTF8.search(data):       # C1 and bidi controls as \u escapes: the same JSON, inert on a terminal
        data = _UNSAFE_UTF8.sub(lambda m: ("\\u%04x" % ord(m.group().decode())).encode(), data)
    sys.stdout.flush()
    if hasattr(sys.stdout, "buffer"):
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:                       # a text-only stream (an embedding caller's StringIO)
        sys.stdout.write(data.decode())


# UTF-8 of U+0080..U+009F (C1), U+061C, U+200E/F, U+2028/9, U+202A..E, U+2066..9 (orjson writes them raw)
_UNSAFE_UTF8 = re.compile(
    rb"\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]")


def fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value != value:
            return "nan"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}g}"
    return str(value)


def open_store(db: str | None):
    from gpuparity.results.store import Store

    return Store(db)


def escape(text: Any) -> str:
    """Any user- or file-supplied string for a rich line: markup escaped, control and bidi
    characters shown as escapes (validate.terminal_safe)."""
    from rich.markup import escape as _escape

    from gpuparity.validate import terminal_safe

    return _escape(terminal_safe(text))


def guard_output(path: Optional[str], option: str, db: Optional[str] = None, inputs: tuple = (),
                 stores: tuple = (), trees: tuple = ()) -> None:
    """The output guard of every verb (validate.check_output_file), before any work: never over the
    store named by --db, the default store ($GPUPARITY_DB or the user data dir), any other store the
    command reads (`stores`), an input of the command or a file of a port source tree."""
    from gpuparity.results.store_url import store_files
    from gpuparity.validate import check_output_file

    protect = store_files(None) + (store_files(db) if db else [])
    for url in stores:
        protect += store_files(url)
    protect += [("an input of this command", str(p)) for p in inputs if p]
    check_output_file(path, option, protect, [str(t) for t in trees])


def side_files(*tokens: Optional[str]) -> tuple[list[str], list[str]]:
    """(files, stores) a command's sides read: run files and store files named as sides, and the
    db= of a filter such as gpu=mi300x,db=team.db."""
    files, stores = [], []
    for token in tokens:
        if not token:
            continue
        if os.path.exists(token):
            files.append(token)
        elif "=" in token:
            for part in token.split(","):
                key, _, value = part.partition("=")
                if key.strip() == "db" and value.strip():
                    stores.append(value.strip())
    return files, stores


def write_output(output: str, text: str, what: str) -> None:
    """Text to a file (whole or not at all: validate.write_file), or to stdout for '-'; a file that
    cannot be written is a one-line error."""
    from gpuparity.errors import UserError
    from gpuparity.validate import terminal_safe, write_file

    if output == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
        return
    try:
        write_file(output, text)
    except OSError as exc:
        raise UserError(f"{terminal_safe(output)}: cannot write ({exc.strerror or exc})") from None
    typer.echo(f"wrote {terminal_safe(output)} ({what})", err=True)     # the name as typed, its controls escaped
