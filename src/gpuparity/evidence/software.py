"""Versions named in a free-text software field (MLPerf's Software / framework), checked against the
releases each stack has, and the stack a row runs on."""

from __future__ import annotations

import re

_VER = r"v?(\d{1,4}\.\d{1,4}(?:\.\d{1,6})?)"
_VER_LONG = r"v?(\d{1,4}(?:\.\d{1,6}){1,4}(?:\.?(?:dev|rc|a|b|post)\d{1,6})?)"
_SEP = r"[\s_-]{0,3}"
_SOFTWARE = {
    "rocm": re.compile(rf"\brocm{_SEP}{_VER}", re.I),
    "cuda": re.compile(rf"\bcuda{_SEP}{_VER}", re.I),
    "tensorrt_llm": re.compile(rf"\btensorrt{_SEP}llm{_SEP}{_VER}", re.I),
    "tensorrt": re.compile(rf"\btensorrt(?!{_SEP}llm){_SEP}{_VER}", re.I),
    "vllm": re.compile(rf"\bvllm{_SEP}{_VER_LONG}", re.I),
    "sglang": re.compile(rf"\bsglang{_SEP}{_VER_LONG}", re.I),
    # "NGC PyTorch 25.04" names the container release, not the PyTorch version.
    "pytorch": re.compile(rf"(?<!ngc )\bpytorch{_SEP}{_VER_LONG}", re.I),
}
_ROCM_TAG = re.compile(r"\.rocm(\d)(\d)(\d)\b", re.I)  # vLLM local version tag, e.g. "+g71faa1880.rocm641"


def parse_software(text: str) -> dict:
    """Versions named in MLPerf's free-text Software field, e.g. 'TensorRT 10.11, CUDA 12.9'."""
    text = (text or "")[:4000]
    out = {}
    for name, pattern in _SOFTWARE.items():
        m = pattern.search(text)
        if m:
            out[name] = m.group(1)
    if "rocm" not in out:
        m = _ROCM_TAG.search(text)
        if m:
            out["rocm"] = ".".join(m.groups())
    return out


# A "version" past these is a driver's, not the stack's. ROCm up to 6.x kept its minors below 8,
# while amdgpu driver versions read 6.8.5, 6.10.5, 6.12.12 (and 30.10 from ROCm 7.0 on); ROCm 7.9 and
# later (7.13.0, ...) are AMD's TheRock preview release line, releases of ROCm. CUDA toolkits are
# 1.x-13.x while NVIDIA drivers are 5xx.yy.
_NOT_A_RELEASE = {
    "rocm": lambda major, minor: (major <= 6 and minor >= 8) or major >= 30,
    "cuda": lambda major, minor: major >= 30,
}


def rocm_line(version: str | None) -> str | None:
    """'preview (TheRock)' for ROCm 7.9 and later 7.x, 'production' for the others, None when unknown."""
    m = re.match(r"(\d{1,4})\.(\d{1,4})", version or "")
    if not m:
        return None
    return "preview (TheRock)" if int(m.group(1)) == 7 and int(m.group(2)) >= 9 else "production"


def check_versions(versions: dict) -> tuple[dict, list[str]]:
    """(versions, notes): a version no release of that stack has (a driver version written in the
    stack field, "ROCm 6.12.12") is dropped and named in a note instead of taken at face value."""
    out, notes = dict(versions), []
    for name, is_driver in _NOT_A_RELEASE.items():
        m = re.match(r"(\d{1,4})\.(\d{1,4})", out.get(name) or "")
        if m and is_driver(int(m.group(1)), int(m.group(2))):
            notes.append(f"{name} {out.pop(name)} in the software field is not a {name} release (likely a "
                         "driver version): the stack version is unknown")
    return out, notes


def _stack(versions: dict, text: str, vendor: str | None) -> str | None:
    low = (text or "").lower()
    if "rocm" in versions or "rocm" in low:
        return "rocm"
    if "cuda" in versions or "tensorrt" in low:
        return "cuda"
    # The software line often names only the serving engine; the part decides the stack.
    return {"AMD": "rocm", "NVIDIA": "cuda"}.get(vendor or "")
