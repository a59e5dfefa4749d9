"""Errors a user can fix: the CLI prints them as one line and exits 2, never a traceback."""

from contextlib import contextmanager


class UserError(Exception):
    """Bad input (file, option, run id). Message is shown as is."""

    exit_code = 2


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler's time limit, `kill`, torchrun stopping its workers): a run stops as it
    does on Ctrl-C, keeping the results that finished; the exit status is 143 instead of 130."""


OOM_MARKERS = ("out of memory", "CUDA out of memory", "HIP out of memory", "DefaultCPUAllocator: can't allocate")


def is_oom(exc: BaseException) -> bool:
    """The device (or the host) ran out of memory: a case that is too big, skipped, not a failure."""
    name = type(exc).__name__
    return name == "OutOfMemoryError" or isinstance(exc, MemoryError) or any(
        m in str(exc) for m in OOM_MARKERS)


RECEIVED: list[int] = []     # stop signals seen, newest last: the exit status says which one


def exit_now(signum, frame):
    """A signal when there is nothing left to save (start-up before the CLI's own handlers, or
    after the work is done): flush what was printed and end the process, 128 + signal number."""
    import os
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed pipe: nothing more to show
            pass
    os._exit(128 + signum)


def exit_on_sigterm(signum, frame):
    """SIGTERM before the CLI has its own handler (start-up): stop as a run would, exit 143."""
    RECEIVED.append(signum)
    raise Terminated()


def interrupt_on_sigint(signum, frame):
    RECEIVED.append(signum)
    raise KeyboardInterrupt()


# True while the `gpuparity` process has nothing to keep (start-up; `run` clears it before its first
# case): a signal inside a deferred block (the torch import: seconds) then ends the process at once.
STOP_AT_ONCE = [False]


def _stop_at_once(signum, frame):
    import sys

    print("interrupted", file=sys.stderr)
    exit_now(signum, frame)


@contextmanager
def signals_deferred():
    """Ctrl-C and SIGTERM held for the length of the block, then delivered to the handler the
    process had: for an import of native code that a KeyboardInterrupt half-way leaves broken
    (torch, half-initialised: every later use fails, or the process aborts). Ignored signals stay
    ignored; outside the main thread (signals go to the main thread) nothing changes. While the
    process has nothing to keep (STOP_AT_ONCE) the signal ends it at once instead (128 + signal
    number): a half-imported torch is no loss to a process that is ending."""
    import signal
    import threading

    held: list[int] = []
    old = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) != signal.SIG_IGN:
                old[signum] = signal.signal(signum, _stop_at_once if STOP_AT_ONCE[0] else lambda s, f: held.append(s))
    try:
        yield
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(held):
            signal.raise_signal(signum)
