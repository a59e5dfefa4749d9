"""Fakes of the vendor management libraries that ARE their Python interfaces.

- fake_pynvml: nvidia-ml-py 13.615.71 (`import pynvml`), as `pynvml.py` of that release defines it.
- fake_amdsmi: amdsmi 6.0.2, 6.1.2, 6.2.4, 6.4.4 and 7.0.2 (the Python interface of ROCm 6.0,
  6.1, 6.2, 6.4 and 7.0), each version's return shapes and types: clock keys (`cur_clk` before
  6.2, `clk` from 6.2), throttle flags (bit masks in 6.0, bools or "N/A" from 6.1), the energy
  counter's key (`power` before 6.4, `energy_accumulator` from 6.4), violation status (6.4+),
  process lists (handles in 6.0, dicts from 6.1), the parameter checks and exceptions.
- site_nolib/ and site_oldlib/: an `amdsmi` package that fails to import as the 7.0.2 wheel does
  without libamd_smi.so (prints to stdout, then KeyError) and over an older library (AttributeError).

real_api.json (made by make_real_api.py from the real packages' files) lists every function with
its parameters, class and IntEnum member of each: a fake defines nothing that is not there
(checked when it is built), and a reader that looks up anything else is recorded in `misses`.
"""

from __future__ import annotations

import json
import os
import sys
import types
from functools import lru_cache

HERE = os.path.dirname(os.path.abspath(__file__))
AMDSMI_VERSIONS = ("6.0.2", "6.1.2", "6.2.4", "6.4.4", "7.0.2")


@lru_cache(maxsize=1)
def real_api() -> dict:
    with open(os.path.join(HERE, "real_api.json")) as fh:
        return json.load(fh)


class StrictModule(types.ModuleType):
    """A module whose missing attributes are recorded (readers swallow the AttributeError they
    raise, so a test asserts on `misses` instead)."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        self.__dict__.setdefault("misses", []).append(name)
        raise AttributeError(f"module '{self.__name__}' has no attribute '{name}'")


def build(name: str, api: dict, members: dict) -> StrictModule:
    """A module of `members`, refusing any function or class the real interface lacks, or a
    function whose parameters differ from the real one's."""
    import inspect

    mod = StrictModule(name)
    mod.misses = []
    for key, value in members.items():
        if callable(value) and not isinstance(value, type) and not key.startswith("_"):
            if key not in api["functions"]:
                raise AssertionError(f"fake {name} defines {key}, which the real interface lacks")
            params = [p.name for p in inspect.signature(value).parameters.values()]
            if params != api["functions"][key]:
                raise AssertionError(f"fake {name}.{key}{tuple(params)}: the real one takes {api['functions'][key]}")
        elif isinstance(value, type) and key not in api["classes"]:
            raise AssertionError(f"fake {name} defines class {key}, which the real interface lacks")
        setattr(mod, key, value)
    return mod


def logged(calls: list):
    """A decorator that records each call's function name in `calls` (inspect.signature still
    sees the real parameters, which build() checks)."""
    def log(fn):
        def wrapped(*args, **kwargs):
            calls.append(fn.__name__)
            return fn(*args, **kwargs)
        wrapped.__name__, wrapped.__wrapped__ = fn.__name__, fn
        return wrapped
    return log


def readers(table: dict, param: str, device, log) -> dict:
    """Functions name(<param>) -> device(<param>).<attribute> for a {name: attribute} table: the
    interface's plain getters, each with the real parameter name."""
    out = {}
    for name, attr in table.items():
        fn = eval(f"lambda {param}: getattr(device({param}), attr)", {"device": device, "attr": attr})  # noqa: S307
        fn.__name__ = name
        out[name] = log(fn)
    return out


def install(monkeypatch, module) -> None:
    """Make `import <module.__name__>` give this module for the test (and gpuparity's readers)."""
    monkeypatch.setitem(sys.modules, module.__name__, module)


def allowed_anywhere(lib: str) -> set[str]:
    """Every name some supported version of the real package has (a reader may probe them)."""
    api = real_api()[lib]
    versions = api.values() if lib == "amdsmi" else [api]
    out: set[str] = set()
    for v in versions:
        out |= set(v["functions"]) | set(v["classes"]) | set(v.get("constants", {}))
    return out
