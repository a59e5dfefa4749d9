"""`python -m gpuparity` (and the `gpuparity` command): signals are handled from the first
instant, before any import, until the process is gone. Before the CLI installs its own handlers
(start-up) SIGTERM and Ctrl-C end the process at once with status 143 / 130: never a traceback,
never a crash in a half-imported library. When the verb is done (printed and saved) the process
ends without interpreter teardown: Python drops its signal handlers while it tears down, and
torch's teardown is slow, so a late signal would otherwise kill a finished, saved run by signal."""

import os
import signal
import sys

from gpuparity.errors import STOP_AT_ONCE, Terminated, exit_now


def entry() -> None:
    for signum in (signal.SIGTERM, signal.SIGINT):
        if signal.getsignal(signum) != signal.SIG_IGN:
            signal.signal(signum, exit_now)
    code = 0
    STOP_AT_ONCE[0] = True          # nothing to keep yet: a signal during the torch import ends it now
    try:
        from gpuparity.cli.main import main

        main()
    except KeyboardInterrupt as exc:
        print("interrupted", file=sys.stderr)
        code = 143 if isinstance(exc, Terminated) else 130      # 128 + signal number
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed pipe: nothing more to show
            pass
    os._exit(code)


if __name__ == "__main__":
    entry()
