"""The one output convention of the verbs that print: -f/--format picks what is printed, -o/--output
FILE writes it to FILE instead of stdout ('-': stdout), --json is -f json. Every FILE goes through
the output guard (common.guard_output) before any work and is written whole or not at all
(validate.write_file). Import-light: click and typer only at module level."""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Any, Callable, Iterator, Optional, Sequence

import click
import typer

from gpuparity.errors import UserError

CONVENTION = "-f picks the format, -o FILE writes it to FILE instead of stdout ('-': stdout)"


def format_option(formats: Sequence[str], default: Optional[str] = "table", help: str = "",
                  json_flag: bool = True) -> Any:
    """-f/--format; json_flag: the verb also takes --json as -f json (run and port: --json FILE, deprecated)."""
    said = CONVENTION + (", --json is -f json" if json_flag and "json" in formats else "")
    return typer.Option(default, "--format", "-f", click_type=click.Choice(list(formats)),
                        help=(help + " " if help else "") + f"Output format ({said}).")


def output_option(help: str = "") -> Any:
    return typer.Option(None, "--output", "-o", metavar="FILE", help=help or "Write the output to this file instead of stdout "
                        "('-': stdout); never over the store, an input, a pipe or a folder.")


def json_option() -> Any:
    return typer.Option(False, "--json", help="Same as -f json.")


def deprecated(old: str, new: str) -> None:
    """The note an old spelling prints (on stderr, after its checks passed): it still works."""
    typer.echo(f"note: {old} is deprecated, use {new} (the old spelling goes in a later release)", err=True)


def size_text(n: int) -> str:
    return f"{n:,} bytes" if n < 10 * 1024 else f"{n // 1024:,} KiB"


class Output:
    """Where one verb's output goes, checked at once (before any work): stdout, or a file that the
    guard allows (never the store, an input, a file of a source tree, a FIFO, a device, a folder)."""

    def __init__(self, fmt: Optional[str], output: Optional[str] = None, as_json: bool = False, *,
                 db: Optional[str] = None, inputs: tuple = (), stores: tuple = (), trees: tuple = (),
                 option: str = "--output", old: Optional[tuple[str, str]] = None) -> None:
        from gpuparity.cli.common import guard_output

        if as_json and fmt not in (None, "table", "json"):
            raise UserError(f"--json is -f json: give one of --json and -f {fmt}")
        self.format = "json" if as_json else fmt
        self.path = None if output in (None, "-") else str(output)
        self.option = option
        self.old = old          # (old spelling, new one) when an old spelling named this output
        guard_output(self.path, option, db, inputs=inputs, stores=stores, trees=trees)

    def note_old_spelling(self) -> None:
        """The deprecation note, printed once the command's checks passed (a refusal stays one line)."""
        if self.old:
            deprecated(*self.old)
            self.old = None

    @property
    def json(self) -> bool:
        return self.format == "json"

    @property
    def to_stdout(self) -> bool:
        return self.path is None

    @contextlib.contextmanager
    def writing(self, what: Optional[Callable[[str], str]] = None) -> Iterator[None]:
        """What the block prints on stdout (print, rich tables, print_json) goes to the file when
        there is one: held in memory, written when the block ends without an error (nothing
        written after one). A terminal-less stream: no colours, tables COLUMNS (or 160) wide."""
        if self.path is None:
            yield
            return
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            yield
        text = buf.getvalue()
        self.text(text, what(text) if what else size_text(len(text.encode("utf-8", "surrogateescape"))))

    def text(self, text: str, what: str) -> None:
        """Text to the file (whole or not at all) or to stdout; a file that cannot be written is a
        one-line error."""
        from gpuparity.cli.common import write_output

        write_output(self.path or "-", text, what)

    def print_json(self, obj: Any, what: Optional[str] = None) -> None:
        """The same JSON text (common.print_json: strict, control characters escaped) on stdout or in the file."""
        from gpuparity.cli.common import print_json

        with self.writing((lambda _: what) if what else None):
            print_json(obj)

    def produce(self, write: Callable[[str], None]) -> None:
        """A writer that needs a path (port's reports): given a temporary name beside the file,
        renamed over it when done; or, for stdout, a temporary file whose bytes are then printed."""
        import os

        from gpuparity.validate import replacing, terminal_safe

        try:
            if self.path is None:
                import tempfile

                with tempfile.TemporaryDirectory() as folder:
                    tmp = os.path.join(folder, "output")
                    write(tmp)
                    with open(tmp, "rb") as fh:
                        data = fh.read()
                sys.stdout.flush()
                sys.stdout.buffer.write(data)
                sys.stdout.buffer.flush()
                return
            with replacing(self.path) as tmp:
                write(tmp)
                size = os.path.getsize(tmp)
        except OSError as exc:
            raise UserError(f"{terminal_safe(self.path or '-')}: cannot write ({exc.strerror or exc})") from None
        typer.echo(f"wrote {terminal_safe(self.path)} ({size_text(size)})", err=True)
