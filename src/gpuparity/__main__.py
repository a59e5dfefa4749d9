"""`python -m gpuparity` (and the `gpuparity` command): signals are handled from the first
instant, before any import, until the interpreter is gone. Before the CLI installs its own
handlers (start-up) and after it restores them (the work is printed and saved), SIGTERM and
Ctrl-C end the process at once with status 143 / 130: never a traceback, never a crash in a
half-imported library, never a late signal turning a saved run into an error."""

import signal
import sys

from gpuparity.errors import Terminated, exit_now


def entry() -> None:
    for signum in (signal.SIGTERM, signal.SIGINT):
        if signal.getsignal(signum) != signal.SIG_IGN:
            signal.signal(signum, exit_now)
    from gpuparity.cli.main import main

    try:
        main()
    except KeyboardInterrupt as exc:
        print("interrupted", file=sys.stderr)
        sys.exit(143 if isinstance(exc, Terminated) else 130)      # 128 + signal number


if __name__ == "__main__":
    entry()
