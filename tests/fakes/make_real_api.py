"""Writes tests/fakes/real_api.json: the Python interfaces of the real vendor packages the fakes
mirror, read from the packages' own files (never typed by hand), so that a test fails when a
reader calls a name the real package does not have, or calls it with other arguments.

    python tests/fakes/make_real_api.py PYNVML_PY=VERSION AMDSMI_DIR=VERSION [AMDSMI_DIR=VERSION ...]

PYNVML_PY: pynvml.py of nvidia-ml-py (pip download nvidia-ml-py); AMDSMI_DIR: the amdsmi/ folder
of an unpacked wheel (pip download amdsmi==V --no-deps; unzip). As generated: nvidia-ml-py
13.615.71; amdsmi 6.0.2, 6.1.2, 6.2.4, 6.4.4 and 7.0.2 (the ROCm 6.0, 6.1, 6.2, 6.4 and 7.0
releases' Python interfaces). Recorded per package: function
names and parameter names, classes (exceptions included), IntEnum members, and pynvml's integer
constants (the fakes use the real values).
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _params(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    return [x.arg for x in a.posonlyargs + a.args] + (["*" + a.vararg.arg] if a.vararg else [])


def _module(path: str) -> ast.Module:
    with open(path) as fh:
        return ast.parse(fh.read())


def pynvml_api(path: str) -> dict:
    tree = _module(path)
    funcs, classes, consts = {}, [], {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            funcs[node.name] = _params(node)
        elif isinstance(node, ast.ClassDef):
            classes.append(node.name)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name.startswith("NVML") and isinstance(node.value, ast.Constant) and type(node.value.value) is int:
                consts[name] = node.value.value
    # NVMLError_<Name> subclasses are made at import by _extractNVMLErrorsAsClasses from NVML_ERROR_<NAME>
    errors = ["NVMLError_" + "".join(w.capitalize() for w in k[len("NVML_ERROR_"):].split("_"))
              for k in consts if k.startswith("NVML_ERROR_")]
    return {"functions": funcs, "classes": sorted(set(classes) | set(errors)), "constants": consts}


def amdsmi_api(folder: str) -> dict:
    """What `import amdsmi` exposes: the names __init__.py imports, with their parameters."""
    with open(os.path.join(folder, "__init__.py")) as fh:
        init = fh.read()
    exported = set(re.findall(r"^\s*from \.amdsmi_\w+ import (\w+)\s*$", init, re.M))
    interface = _module(os.path.join(folder, "amdsmi_interface.py"))
    exceptions = _module(os.path.join(folder, "amdsmi_exception.py"))
    funcs, classes, enums = {}, [], {}
    for node in interface.body + exceptions.body:
        if isinstance(node, ast.FunctionDef) and node.name in exported:
            funcs[node.name] = _params(node)
        elif isinstance(node, ast.ClassDef) and (node.name in exported or node.name.endswith("Exception")):
            classes.append(node.name)
            if any(isinstance(b, ast.Name) and b.id == "IntEnum" for b in node.bases):
                enums[node.name] = [t.targets[0].id for t in node.body
                                    if isinstance(t, ast.Assign) and isinstance(t.targets[0], ast.Name)]
    return {"functions": funcs, "classes": sorted(set(classes)), "enums": enums}


def main(argv: list[str]) -> None:
    pynvml_py, nv_version = argv[0].split("=")
    out = {"pynvml": {"package": "nvidia-ml-py", "version": nv_version, **pynvml_api(pynvml_py)}, "amdsmi": {}}
    amd = argv[1:]
    for spec in amd:
        folder, ver = spec.split("=")
        out["amdsmi"][ver] = {"package": "amdsmi", "version": ver, **amdsmi_api(folder)}
    with open(os.path.join(HERE, "real_api.json"), "w") as fh:
        json.dump(out, fh, indent=0, sort_keys=True)
        fh.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
