"""Entry point. Each verb lives in its own thin module with a `register(app)` function.

Verb modules must not import torch, numpy, pandas or other heavy libraries at module level:
`gpuparity --help` and the store/report/port verbs start in well under 0.5 s.
"""

from __future__ import annotations

import importlib
import sys

import typer
import typer.core

from gpuparity.errors import RECEIVED, Terminated, UserError

# typer escapes "[default: x]" for rich whenever rich is installed, even with rich_markup_mode=None,
# so plain help showed a literal "\\[default: x]"; help here is plain text, so say rich is absent.
typer.core.HAS_RICH = False


def _keep_argument_help(init):
    """click >= 8.2 sets Parameter.help itself, wiping the help typer stored for an argument
    before calling it: every "Arguments:" entry showed a bare name. Store it again after."""
    def wrapper(self, *args, help=None, **kwargs):
        init(self, *args, help=help, **kwargs)
        self.help = help
    return wrapper


typer.core.TyperArgument.__init__ = _keep_argument_help(typer.core.TyperArgument.__init__)
# click >= 8.2 also lists documented arguments itself ("Positional arguments"), after typer's own
# "Arguments" section: one list is enough.
typer.core.TyperCommand.format_arguments = lambda self, ctx, formatter: None

# Order is the order shown in --help.
VERBS = [
    "info", "specs", "plan", "run", "submit", "list_runs", "show", "export", "import_run",
    "compare", "trend", "report", "reference", "claims", "port",
]

app = typer.Typer(
    name="gpuparity",
    help="Is ROCm at parity with CUDA for my workload? Measurements, not vendor slides.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help text: rendering it through rich costs ~0.2 s of start-up
    context_settings={"help_option_names": ["-h", "--help"]},
)


_REGISTERED: list[bool] = []


def _register_all() -> None:
    if _REGISTERED:            # in-process callers (tests, notebooks) call main() many times
        return
    _REGISTERED.append(True)
    for verb in VERBS:
        try:
            module = importlib.import_module(f"gpuparity.cli.{verb}")
        except ModuleNotFoundError as exc:
            if exc.name == f"gpuparity.cli.{verb}":
                continue  # verb not built yet
            raise
        module.register(app)


def _print_version(value: bool) -> None:
    if value:
        from gpuparity.version import BENCHMARK_VERSION, __version__

        typer.echo(f"gpuparity {__version__} (benchmark version {BENCHMARK_VERSION})")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", is_eager=True, callback=_print_version,
                                 help="Print the version and exit."),
) -> None:
    """Is ROCm at parity with CUDA for my workload? Measurements, not vendor slides."""


def main(argv: list[str] | None = None) -> None:
    import signal
    import threading

    # SIGTERM stops any verb as Ctrl-C does (exit 143), from the first instant: a scheduler's kill
    # during start-up must not leave a half-written file or a killed-by-signal status.
    from gpuparity.errors import exit_now, exit_on_sigterm, interrupt_on_sigint

    main_thread = threading.current_thread() is threading.main_thread()
    mine = main_thread and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, exit_now)
    old = signal.signal(signal.SIGTERM, exit_on_sigterm) if mine else None
    ours_int = main_thread and signal.getsignal(signal.SIGINT) in (signal.default_int_handler, exit_now)
    old_int = signal.signal(signal.SIGINT, interrupt_on_sigint) if ours_int else None
    try:
        _main(argv)
    finally:
        if mine:
            signal.signal(signal.SIGTERM, old)
        if ours_int:
            signal.signal(signal.SIGINT, old_int)


def _check_argv(argv: list[str]) -> None:
    """Every word of the command line is valid UTF-8 text, or the command stops here (exit 2): a
    byte that is not (a lone surrogate to Python) could not be stored, printed or compared."""
    from gpuparity.validate import check_utf8

    for i, word in enumerate(argv, start=1):
        check_utf8(word, f"argument {i}")


def _main(argv: list[str] | None) -> None:
    _register_all()
    try:
        _check_argv(sys.argv[1:] if argv is None else argv)
        rc = app(args=argv, standalone_mode=False)
        if rc == 130 and RECEIVED:    # typer turns a KeyboardInterrupt (SIGTERM's too) into exit code 130
            print("interrupted", file=sys.stderr)
            sys.exit(128 + RECEIVED[-1])
        if isinstance(rc, int) and rc:  # click returns typer.Exit codes in this mode
            sys.exit(rc)
    except UserError as exc:
        from gpuparity.validate import mask_secrets, terminal_safe

        print(f"error: {terminal_safe(mask_secrets(exc))}", file=sys.stderr)   # a URL's password is never shown
        sys.exit(exc.exit_code)
    except KeyboardInterrupt as exc:
        print("interrupted", file=sys.stderr)
        sys.exit(143 if isinstance(exc, Terminated) else 130)     # 128 + signal number
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except Exception as exc:  # usage errors from typer's click
        click_exc = _click_exceptions()
        if isinstance(exc, click_exc.UsageError):      # one line, as every other bad input
            from gpuparity.validate import mask_secrets, terminal_safe

            print(f"error: {terminal_safe(mask_secrets(exc.format_message()))} (see --help)", file=sys.stderr)
            sys.exit(exc.exit_code)
        if isinstance(exc, click_exc.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if isinstance(exc, click_exc.Abort):
            print("aborted", file=sys.stderr)
            sys.exit(130)
        raise


def _click_exceptions():
    """typer >= 0.2x vendors click as typer._click; older ones use click itself."""
    try:
        from typer._click import exceptions
    except ImportError:
        from click import exceptions
    return exceptions
