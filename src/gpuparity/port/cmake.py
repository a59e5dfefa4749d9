"""Translate CMake build files from CUDA to HIP.

CMake is tokenised too: comments and quoted strings are kept, except `${VAR}` references
inside quoted arguments, which are code. Rewrites:
  project(... LANGUAGES CUDA)      -> HIP          enable_language(CUDA) -> enable_language(HIP)
  find_package(CUDAToolkit|CUDA)   -> find_package(hip) (+ find_package(<lib>) per library used)
  CUDA::cudart / CUDA::cublas ...  -> hip::host / roc::hipblas ...
  CMAKE_CUDA_* variables, CUDA_* target properties -> the HIP ones; sm_XX arch numbers -> gfx targets
  each .cu source of a target      -> set_source_files_properties(... PROPERTIES LANGUAGE HIP)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuparity.port.translate import ApiUse, Rewrite, Translation

DEFAULT_HIP_ARCHS = "gfx90a;gfx942"

# CUDA imported target -> (HIP imported target, package providing it)
TARGETS: dict[str, tuple[str, str] | None] = {
    "CUDA::cudart": ("hip::host", "hip"),
    "CUDA::cudart_static": ("hip::host", "hip"),
    "CUDA::cuda_driver": ("hip::host", "hip"),
    "CUDA::cublas": ("roc::hipblas", "hipblas"),
    "CUDA::cublas_static": ("roc::hipblas", "hipblas"),
    "CUDA::cublasLt": ("roc::hipblaslt", "hipblaslt"),
    "CUDA::curand": ("hip::hiprand", "hiprand"),
    "CUDA::curand_static": ("hip::hiprand", "hiprand"),
    "CUDA::cufft": ("hip::hipfft", "hipfft"),
    "CUDA::cufft_static": ("hip::hipfft", "hipfft"),
    "CUDA::cusparse": ("roc::hipsparse", "hipsparse"),
    "CUDA::cusparse_static": ("roc::hipsparse", "hipsparse"),
    "CUDA::cusolver": ("roc::hipsolver", "hipsolver"),
    "CUDA::cusolver_static": ("roc::hipsolver", "hipsolver"),
    "CUDA::nvrtc": ("hiprtc::hiprtc", "hiprtc"),
    "CUDA::nvToolsExt": None,
    "CUDA::nvtx3": None,
    "CUDA::cupti": None,
    "CUDA::nvml": None,
}
# Bare library names in target_link_libraries
BARE_LIBS = {"cudart": "hip::host", "cuda": "hip::host", "cublas": "roc::hipblas",
             "curand": "hip::hiprand", "cufft": "hip::hipfft", "cusparse": "roc::hipsparse",
             "cusolver": "roc::hipsolver"}
BARE_LIB_PACKAGE = {"roc::hipblas": "hipblas", "hip::hiprand": "hiprand", "hip::hipfft": "hipfft",
                    "roc::hipsparse": "hipsparse", "roc::hipsolver": "hipsolver"}
# --roc: the ROCm libraries' own CMake packages and targets instead of the hip* wrappers.
ROC_TARGETS: dict[str, tuple[str, str] | None] = {}
ROC_BARE_LIBS: dict[str, str] = {}
for _lib in ("blas", "sparse", "rand", "solver"):
    for _suffix in ("", "_static"):
        ROC_TARGETS[f"CUDA::cu{_lib}{_suffix}"] = (f"roc::roc{_lib}", f"roc{_lib}")
    ROC_BARE_LIBS[f"cu{_lib}"] = f"roc::roc{_lib}"
ROC_LIB_PACKAGE = {f"roc::roc{lib}": f"roc{lib}" for lib in ("blas", "sparse", "rand", "solver")}
VARIABLES = {
    "CMAKE_CUDA_ARCHITECTURES": "CMAKE_HIP_ARCHITECTURES",
    "CMAKE_CUDA_STANDARD": "CMAKE_HIP_STANDARD",
    "CMAKE_CUDA_STANDARD_REQUIRED": "CMAKE_HIP_STANDARD_REQUIRED",
    "CMAKE_CUDA_EXTENSIONS": "CMAKE_HIP_EXTENSIONS",
    "CMAKE_CUDA_FLAGS": "CMAKE_HIP_FLAGS",
    "CMAKE_CUDA_FLAGS_DEBUG": "CMAKE_HIP_FLAGS_DEBUG",
    "CMAKE_CUDA_FLAGS_RELEASE": "CMAKE_HIP_FLAGS_RELEASE",
    "CMAKE_CUDA_COMPILER": "CMAKE_HIP_COMPILER",
    "CMAKE_CUDA_HOST_COMPILER": "CMAKE_HIP_HOST_COMPILER",
    "CMAKE_CUDA_COMPILER_ID": "CMAKE_HIP_COMPILER_ID",
    "CMAKE_CUDA_COMPILER_VERSION": "CMAKE_HIP_COMPILER_VERSION",
    "CUDA_ARCHITECTURES": "HIP_ARCHITECTURES",
    "CUDA_STANDARD": "HIP_STANDARD",
    "CUDA_STANDARD_REQUIRED": "HIP_STANDARD_REQUIRED",
    "CUDA_EXTENSIONS": "HIP_EXTENSIONS",
}
UNSUPPORTED_WORDS = {"CUDA_SEPARABLE_COMPILATION", "CUDA_RESOLVE_DEVICE_SYMBOLS", "CUDA_NVCC_FLAGS",
                     "CUDAToolkit_INCLUDE_DIRS", "CUDAToolkit_LIBRARY_DIR", "CUDA_PTX_COMPILATION"}
LEGACY_COMMANDS = {"cuda_add_executable": "add_executable", "cuda_add_library": "add_library"}
_ARCH_NUMBER = re.compile(r"^\d{2,3}(-real|-virtual)?$|^sm_\d+$|^native$|^all(-major)?$")

_LEX = re.compile(
    r"""
    (?P<bcomment>\#\[(?P<eq>=*)\[[\s\S]*?\](?P=eq)\])
   |(?P<comment>\#[^\n]*)
   |(?P<quoted>"(?:\\[\s\S]|[^"\\])*")
   |(?P<bracket>\[(?P<eq2>=*)\[[\s\S]*?\](?P=eq2)\])
   |(?P<lp>\()|(?P<rp>\))
   |(?P<nl>\n)
   |(?P<ws>[ \t\r]+)
   |(?P<word>(?:[^\s()#"\\]|\\.)+)
    """,
    re.X,
)
_VAR_REF = re.compile(r"\$\{(\w+)\}")


@dataclass
class _Tok:
    kind: str
    text: str
    start: int
    end: int
    line: int


def _lex(text: str) -> list[_Tok]:
    out, pos, line = [], 0, 1
    while pos < len(text):
        m = _LEX.match(text, pos)
        if m is None:  # a stray character: keep it as a word so nothing is lost
            out.append(_Tok("word", text[pos], pos, pos + 1, line))
            pos += 1
            continue
        kind = m.lastgroup
        if kind in ("eq", "eq2"):
            kind = "bcomment" if m.group("bcomment") else "bracket"
        tok = _Tok(kind, m.group(), pos, m.end(), line)
        if kind not in ("ws",):
            out.append(tok)
        line += tok.text.count("\n")
        pos = m.end()
    return out


@dataclass
class _Command:
    name: str
    name_tok: _Tok
    args: list[_Tok]
    close: _Tok


def _commands(toks: list[_Tok]) -> list[_Command]:
    cmds = []
    i, n = 0, len(toks)
    while i < n:
        t = toks[i]
        if t.kind == "word" and i + 1 < n and toks[i + 1].kind == "lp":
            depth, j, args = 0, i + 1, []
            while j < n:
                k = toks[j].kind
                if k == "lp":
                    depth += 1
                    if depth > 1:
                        args.append(toks[j])
                elif k == "rp":
                    depth -= 1
                    if depth == 0:
                        break
                    args.append(toks[j])
                elif k not in ("nl", "comment", "bcomment"):
                    args.append(toks[j])
                j += 1
            if j >= n:
                break
            cmds.append(_Command(t.text.lower(), t, args, toks[j]))
            i = j + 1
        else:
            i += 1
    return cmds


def translate_cmake(text: str, roc: bool = False) -> Translation:
    """The HIP CMake text; roc: link the ROCm libraries (rocBLAS ...) instead of hip* ones."""
    targets = {**TARGETS, **ROC_TARGETS} if roc else TARGETS
    bare_libs = {**BARE_LIBS, **ROC_BARE_LIBS} if roc else BARE_LIBS
    bare_packages = {**BARE_LIB_PACKAGE, **ROC_LIB_PACKAGE} if roc else BARE_LIB_PACKAGE
    toks = _lex(text)
    result = Translation(text=text, engine="cmake")
    edits: list[tuple[int, int, str]] = []
    uses = result.uses
    packages: list[str] = []
    find_cuda_cmd: _Command | None = None

    def use(name: str, line: int, hip: str | None, ok: bool, reason: str = "") -> None:
        uses.append(ApiUse(name, line, "cmake", hip, ok, reason))

    def replace(tok: _Tok, new: str) -> None:
        edits.append((tok.start, tok.end, new))

    for cmd in _commands(toks):
        words = [a for a in cmd.args if a.kind == "word"]
        if cmd.name in LEGACY_COMMANDS:
            replace(cmd.name_tok, LEGACY_COMMANDS[cmd.name])
            use(cmd.name_tok.text, cmd.name_tok.line, LEGACY_COMMANDS[cmd.name], True)
        if cmd.name == "project":
            for w in words[1:]:
                if w.text == "CUDA":
                    replace(w, "HIP")
                    use("project(LANGUAGES CUDA)", w.line, "HIP", True)
        elif cmd.name == "enable_language":
            for w in words:
                if w.text == "CUDA":
                    replace(w, "HIP")
                    use("enable_language(CUDA)", w.line, "enable_language(HIP)", True)
        elif cmd.name == "find_package" and words and words[0].text in ("CUDAToolkit", "CUDA"):
            replace(words[0], "hip")
            use(f"find_package({words[0].text})", words[0].line, "find_package(hip)", True)
            if len(words) > 1 and re.match(r"^\d+(\.\d+)*$", words[1].text):
                edits.append((words[0].end, words[1].end, ""))  # a CUDA version means nothing to hip
            find_cuda_cmd = cmd
        elif cmd.name in ("set", "set_property", "set_target_properties", "set_source_files_properties"):
            _architectures(cmd, words, edits, result)
        if cmd.name in ("add_executable", "add_library", "cuda_add_executable", "cuda_add_library",
                        "target_sources"):
            cu = [w.text for w in words if w.text.endswith(".cu")]
            if cu:
                indent = text[text.rfind("\n", 0, cmd.name_tok.start) + 1:cmd.name_tok.start]
                indent = indent if not indent.strip() else ""
                edits.append((cmd.close.end, cmd.close.end,
                              f"\n{indent}set_source_files_properties({' '.join(cu)} PROPERTIES LANGUAGE HIP)"))
                result.rewrites.append(Rewrite(cmd.name_tok.line, f"{', '.join(cu)}: LANGUAGE HIP"))
        if cmd.name == "target_link_libraries":
            for w in words:
                new = bare_libs.get(w.text)
                if new:
                    replace(w, new)
                    use(w.text, w.line, new, True)
                    if new in bare_packages:
                        packages.append(bare_packages[new])
    # Words anywhere (variables, imported targets), and ${VAR} inside quoted arguments.
    for t in toks:
        if t.kind == "word":
            word = t.text
            if word in targets:
                mapped = targets[word]
                if mapped is None:
                    use(word, t.line, None, False, "no HIP counterpart")
                else:
                    replace(t, mapped[0])
                    use(word, t.line, mapped[0], True)
                    if mapped[1] not in ("hip",):
                        packages.append(mapped[1])
                continue
            _rename_vars(t, word, edits, result, bare=True)
        elif t.kind == "quoted":
            _rename_vars(t, t.text, edits, result, bare=False)
    if packages:
        wanted = list(dict.fromkeys(packages))
        lines = "".join(f"\nfind_package({p} REQUIRED)" for p in wanted)
        if find_cuda_cmd is not None:
            edits.append((find_cuda_cmd.close.end, find_cuda_cmd.close.end, lines))
        result.rewrites.append(Rewrite(find_cuda_cmd.name_tok.line if find_cuda_cmd else 0,
                                       "added find_package for " + ", ".join(wanted)))
    result.text = _apply(text, edits)
    return result


def _architectures(cmd: _Command, words: list[_Tok], edits: list, result: Translation) -> None:
    """Numeric CUDA arch lists (70 80, sm_80, native) become AMD gfx targets."""
    for idx, w in enumerate(words):
        if w.text in ("CMAKE_CUDA_ARCHITECTURES", "CUDA_ARCHITECTURES"):
            values = []
            for v in words[idx + 1:]:
                if _ARCH_NUMBER.match(v.text.strip('"')):
                    values.append(v)
                else:
                    break
            quoted = [a for a in cmd.args if a.kind == "quoted" and a.start > w.end
                      and all(_ARCH_NUMBER.match(x) for x in a.text.strip('"').replace(";", " ").split())]
            if values:
                edits.append((values[0].start, values[-1].end, DEFAULT_HIP_ARCHS))
            elif quoted:
                edits.append((quoted[0].start, quoted[0].end, f'"{DEFAULT_HIP_ARCHS}"'))
            if values or quoted:
                result.rewrites.append(Rewrite(w.line, f"{w.text}: NVIDIA sm numbers -> {DEFAULT_HIP_ARCHS}"))


def _rename_vars(t: _Tok, text: str, edits: list, result: Translation, bare: bool) -> None:
    if bare and text in VARIABLES:
        edits.append((t.start, t.end, VARIABLES[text]))
        result.uses.append(ApiUse(text, t.line, "cmake", VARIABLES[text], True))
        return
    if bare and text in UNSUPPORTED_WORDS:
        result.uses.append(ApiUse(text, t.line, "cmake", None, False, "no HIP counterpart"))
        return
    for m in _VAR_REF.finditer(text):
        var = m.group(1)
        if var in VARIABLES:
            edits.append((t.start + m.start(1), t.start + m.end(1), VARIABLES[var]))
            result.uses.append(ApiUse(var, t.line, "cmake", VARIABLES[var], True))
        elif var in UNSUPPORTED_WORDS:
            result.uses.append(ApiUse(var, t.line, "cmake", None, False, "no HIP counterpart"))


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    out, pos = [], 0
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[0] != e[1], -e[1])):
        if start < pos:
            continue
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def is_cmake_file(name: str) -> bool:
    return name == "CMakeLists.txt" or name.endswith(".cmake")
