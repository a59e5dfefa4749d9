"""HIP-CPU, the header-only HIP runtime for the CPU (AMD, MIT), and the g++ that builds on it.

The package ships HIP-CPU's headers (port/data/hip-cpu, as the report ships plotly.js);
`--hip-cpu DIR` names another copy (a HIP-CPU checkout: DIR/include/hip/hip_runtime.h). A copy
whose headers include files it lacks is refused in one line before any build, as is a machine
without g++ or TBB (which HIP-CPU's parallel algorithms need), naming the package to install.

A build is `g++ -std=c++17 -O1`: HIP-CPU's headers are most of the compile time, and -O1 keeps
the kernels' loops fast enough for self-checking programs while compiling faster than -O2.
A prelude (`-include`) gives the `_sync` shuffles HIP >= 6.2 has and HIP-CPU lacks, as the
shuffles without the mask (which HIP-CPU has, with a width).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from gpuparity.errors import UserError
from gpuparity.port.check import include_flags
from gpuparity.validate import terminal_safe

CXX_FLAGS = ("-std=c++17", "-O1", "-w")
LIBS = ("-ltbb", "-lpthread")
_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

PRELUDE = """// gpuparity port --run: what HIP-CPU lacks of HIP >= 6.2, in the forms it has.
#include <hip/hip_runtime.h>
template<typename T> inline T __shfl_sync(unsigned long long, T v, int src, int width = warpSize)
{ return __shfl(v, src, width); }
template<typename T> inline T __shfl_up_sync(unsigned long long, T v, unsigned int d, int width = warpSize)
{ return __shfl_up(v, d, width); }
template<typename T> inline T __shfl_down_sync(unsigned long long, T v, unsigned int d, int width = warpSize)
{ return __shfl_down(v, d, width); }
template<typename T> inline T __shfl_xor_sync(unsigned long long, T v, int mask, int width = warpSize)
{ return __shfl_xor(v, mask, width); }
"""


@dataclass(frozen=True)
class HipCpu:
    root: Path      # holds include/hip/hip_runtime.h
    compiler: str   # g++'s path
    version: str    # `g++ -dumpfullversion`

    @property
    def include(self) -> Path:
        return self.root / "include"

    def describe(self) -> str:
        return f"HIP-CPU at {self.root}, g++ {self.version} {' '.join(CXX_FLAGS[:2])}"


def packaged() -> Path:
    return Path(str(resources.files("gpuparity.port") / "data" / "hip-cpu"))


def missing_header(root: Path) -> str | None:
    """The first header HIP-CPU's headers include (by a quoted path) that the copy lacks."""
    todo, seen = [root / "include" / "hip" / "hip_runtime.h"], set()
    if not todo[0].is_file():
        return "include/hip/hip_runtime.h"
    while todo:
        header = todo.pop()
        if header in seen:
            continue
        seen.add(header)
        for name in _QUOTED_INCLUDE.findall(header.read_text(encoding="utf-8", errors="replace")):
            target = (header.parent / name).resolve()
            if not target.is_file():
                try:
                    return str(target.relative_to(root.resolve()))
                except ValueError:
                    return str(target)
            todo.append(target)
    return None


def _has_tbb(compiler: str) -> bool:
    """TBB's library where g++ links from (`-print-file-name` echoes the bare name when it is not)."""
    try:
        out = subprocess.run([compiler, "-print-file-name=libtbb.so"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return False
    return out not in ("", "libtbb.so") and Path(out).exists()


def locate(given: Path | None) -> HipCpu:
    """The HIP-CPU copy to build with and g++, or a one-line UserError saying what to install."""
    root = given if given is not None else packaged()
    where = f"--hip-cpu {terminal_safe(str(given))}" if given is not None else f"the packaged HIP-CPU ({root})"
    if not (root / "include" / "hip").is_dir():
        raise UserError(f"{where}: no include/hip folder there (give a HIP-CPU checkout)")
    lacking = missing_header(root)
    if lacking:
        raise UserError(f"{where} is incomplete: it lacks {terminal_safe(lacking)} (give --hip-cpu DIR, a full "
                        "HIP-CPU checkout)")
    compiler = shutil.which("g++")
    if compiler is None:
        raise UserError("port --run builds with g++, which is not installed (apt-get install g++)")
    if not _has_tbb(compiler):
        raise UserError("port --run needs TBB for HIP-CPU, which is not installed (apt-get install libtbb-dev)")
    version = subprocess.run([compiler, "-dumpfullversion"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL).stdout.strip()
    return HipCpu(root.resolve(), compiler, version)


def build_command(hc: HipCpu, units: list[Path], exe: Path, includes: list[Path], prelude: Path) -> list[str]:
    """g++ on the build copies (absolute paths this module's caller generated: no name from the
    tree starts with '-' here)."""
    return [hc.compiler, *CXX_FLAGS, "-I", str(hc.include), *include_flags(includes), "-include", str(prelude), "-x", "c++",
            *map(str, units), "-x", "none", "-o", str(exe), *LIBS]


_UNDECLARED = re.compile(r"error: '([A-Za-z_]\w*)' (?:was not declared in this scope|is not a member of|"
                         r"has not been declared)|error: there are no arguments to '([A-Za-z_]\w*)'|"
                         r"error: no matching function for call to '([A-Za-z_]\w*)")
_NO_HEADER = re.compile(r"fatal error: ([^\s:]+): No such file or directory")


def runtime_gap(output: str) -> str | None:
    """A compile error that says HIP-CPU lacks a HIP name or header (not a fault of the port):
    the name or header, or None."""
    output = output.replace("\u2018", "'").replace("\u2019", "'")
    for m in _UNDECLARED.finditer(output):
        name = next(g for g in m.groups() if g)
        if name.startswith(("hip", "HIP", "__")):
            return f"{name} is not in HIP-CPU"
    m = _NO_HEADER.search(output)
    if m and m.group(1).startswith(("hip", "roc", "miopen", "thrust", "cub")):
        return f"{m.group(1)} is not in HIP-CPU"
    return None
