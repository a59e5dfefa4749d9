"""What a HIP source needs before g++ builds it against HIP-CPU, and what HIP-CPU cannot run.

HIP-CPU is plain C++ on the CPU: g++ cannot parse `<<<...>>>` launches, so they become
`hipLaunchKernelGGL` (the translator's own launch rewrite, port/launch.py, alone: it renames no
HIP name and touches nothing else); its `__shared__` is a storage class, so a function-scope
`extern __shared__ T a[];` becomes `HIP_DYNAMIC_SHARED(T, a)`. These edits are made to the build
copy only, never to the port's output or to a human port.

What HIP-CPU has no implementation of (textures, cooperative groups, inline assembly, the
libraries, warp votes and AMD builtins) is found in the source before any build and reported as
"not runnable on HIP-CPU: <reason>", which is not a failure of the port.
"""

from __future__ import annotations

import re

from gpuparity.port.launch import rewrite_launches_ggl
from gpuparity.port.tokens import Token, tokenize

# Identifiers HIP-CPU has no counterpart for, by the reason given.
_NAMES = {
    "textures": {"tex1D", "tex2D", "tex3D", "tex1Dfetch", "tex2DLayered", "texture", "hipTextureObject_t",
                 "hipCreateTextureObject", "hipBindTexture", "hipBindTexture2D", "surf2Dread", "surf2Dwrite",
                 "hipSurfaceObject_t", "hipCreateSurfaceObject"},
    "cooperative groups": {"cooperative_groups", "hipLaunchCooperativeKernel", "hipLaunchCooperativeKernelMultiDevice"},
    "inline assembly": {"asm", "__asm__", "__asm"},
    "warp vote/sync intrinsics HIP-CPU lacks": {"__ballot_sync", "__any_sync", "__all_sync", "__activemask",
                                                "__match_any_sync", "__match_all_sync", "__reduce_add_sync",
                                                "__reduce_min_sync", "__reduce_max_sync", "__syncwarp"},
}
_REASON_OF = {name: reason for reason, names in _NAMES.items() for name in names}
# Library headers (HIPIFY's names and the folder layout): HIP-CPU implements the runtime only.
_LIBRARIES = ("hipblas", "hipblaslt", "rocblas", "hipsparse", "rocsparse", "hiprand", "rocrand", "hipfft", "rocfft",
              "hipsolver", "rocsolver", "miopen", "hipdnn", "hipcub", "rocprim", "thrust", "rccl", "rocwmma",
              "hip_cooperative_groups")
_LIBRARY_HEADER = re.compile(r"[<\"](?:hip/)?(%s)\b" % "|".join(_LIBRARIES))


def not_runnable(text: str) -> str | None:
    """Why HIP-CPU cannot run this HIP source (the first reason, with the name and line), or None."""
    for tok in tokenize(text)[0]:
        if tok.kind == "header":
            m = _LIBRARY_HEADER.match(tok.text)
            if m:
                lib = "cooperative groups" if m.group(1) == "hip_cooperative_groups" else f"library calls ({m.group(1)})"
                return f"{lib}: {tok.text} at line {tok.line}"
        elif tok.kind == "id" and not tok.directive and tok.text in _REASON_OF:
            return f"{_REASON_OF[tok.text]}: {tok.text} at line {tok.line}"
        elif tok.kind == "id" and not tok.directive and tok.text.startswith("__builtin_amdgcn_"):
            return f"AMD GPU builtins: {tok.text} at line {tok.line}"
    return None


def _dynamic_shared(text: str, toks: list[Token]) -> str:
    """`extern __shared__ [__align__(N)] T name[];` inside a function body -> HIP_DYNAMIC_SHARED(T, name)."""
    depth, edits = 0, []
    code = [t for t in toks if t.kind not in ("comment",) and not t.directive]
    for k, tok in enumerate(code):
        if tok.text == "{":
            depth += 1
        elif tok.text == "}":
            depth -= 1
        elif depth > 0 and tok.text == "extern" and k + 1 < len(code) and code[k + 1].text == "__shared__":
            end = next((j for j in range(k + 2, len(code)) if code[j].text in (";", "{", "}")), None)
            if end is None or code[end].text != ";" or end < k + 6:
                continue
            if [t.text for t in code[end - 2:end]] != ["[", "]"]:
                continue
            name = code[end - 3]
            parts = code[k + 2:end - 3]
            if len(parts) > 3 and parts[0].text in ("__align__", "alignas"):  # __align__(16) T: the type after it
                close = next((j for j, t in enumerate(parts) if t.text == ")"), len(parts) - 1)
                parts = parts[close + 1:]
            if name.kind != "id" or not parts:
                continue
            ctype = text[parts[0].start:parts[-1].end]
            edits.append((tok.start, code[end].end, f"HIP_DYNAMIC_SHARED({ctype}, {name.text})"))
    for start, end, new in reversed(edits):
        text = text[:start] + new + text[end:]
    return text


def for_hip_cpu(text: str) -> str:
    """The build copy's text of one HIP source: launches through hipLaunchKernelGGL and
    function-scope dynamic shared arrays through HIP_DYNAMIC_SHARED."""
    if "<<<" in text:
        text = rewrite_launches_ggl(text)[0]
    if "__shared__" in text:
        text = _dynamic_shared(text, tokenize(text)[0])
    return text
