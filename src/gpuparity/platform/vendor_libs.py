"""The vendor management libraries (nvidia-ml-py's `pynvml`, `amdsmi`), imported without letting
them stop a run or write to stdout.

`import amdsmi` fails in more ways than ImportError: the wheel prints "Unable to find
libamd_smi.so ..." to stdout and then raises KeyError when the library is missing, and a newer
wheel over an older ROCm raises AttributeError for symbols that library lacks. Any exception is
kept as the reason; anything printed during the import (Python's print and the C library's own
output on file descriptor 1) goes to stderr, so `run -f json` on stdout stays JSON.

    module, reason = load("amdsmi")      # (None, "amdsmi unavailable: KeyError: ...") on failure
    with quiet_stdout():                 # for calls into a library that may print (init)
        module.amdsmi_init()
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import sys

INSTALL_HINT = {"pynvml": "nvidia-ml-py not installed (pip install 'gpuparity[nvidia]')",
                "amdsmi": "amdsmi not installed (pip install 'gpuparity[amd]')"}


@contextlib.contextmanager
def quiet_stdout(keep: io.StringIO | None = None):
    """Python-level prints into `keep` (or stderr), the process's fd 1 onto stderr, while inside."""
    target = keep if keep is not None else sys.stderr
    saved = None
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a closed or odd stdout: nothing to flush
        pass
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:       # no fd 1 or 2 (an embedding host): Python-level redirect only
        saved = None
    try:
        with contextlib.redirect_stdout(target):
            yield
    finally:
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def load(name: str):
    """(module, None), or (None, why) when the library cannot be imported; never raises. Not
    cached: a module that imported is in sys.modules, and a failure is cheap to repeat."""
    printed = io.StringIO()
    try:
        with quiet_stdout(printed):
            module = importlib.import_module(name)
        return module, None
    except ModuleNotFoundError as exc:
        return None, (INSTALL_HINT.get(name, str(exc)) if exc.name == name else f"{name} unavailable: {exc}")
    except BaseException as exc:  # noqa: BLE001 - KeyError, AttributeError, OSError, SystemExit ... all mean "absent"
        if isinstance(exc, KeyboardInterrupt):
            raise
        said = " ".join(printed.getvalue().split())[:300]
        return None, (f"{name} unavailable: {type(exc).__name__}: {str(exc)[:200]}" + (f" (it printed: {said})"
                                                                                       if said else ""))
