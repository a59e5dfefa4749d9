"""What a translation takes and gives: its options, the CUDA API uses it found, the rewrites
it made (translate.py fills them; run.py and report.py read them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuparity.port import mappings
from gpuparity.port.tokens import Token


@dataclass
class Options:
    hip_version: tuple[int, ...] = mappings.parse_version(mappings.NEWEST_HIP)
    launch: str = "chevron"  # or "ggl": emit hipLaunchKernelGGL(...)
    engine: str = "auto"  # tokenizer: auto | tree-sitter | lexer
    roc: bool = False  # cuBLAS/cuSPARSE/cuRAND/cuSOLVER -> rocBLAS/rocSPARSE/rocRAND/rocSOLVER
    experimental: bool = True  # also the APIs HIPIFY marks experimental (its --experimental)
    hip_data_types: bool = False  # cudaDataType -> hipDataType (not the libraries' own enums)
    skip_excluded: bool = False  # leave #if branches excluded under `defines` untranslated
    defines: tuple[str, ...] = ()  # NAME or NAME=VALUE, as -D gives them (for skip_excluded)
    dnn: str = "miopen"  # cuDNN to MIOpen, or to hipDNN's names (HIPIFY's default without --miopen)
    headers: str = "hipify"  # library header layout (mappings.LAYOUTS): hipblas.h or hipblas/hipblas.h


@dataclass
class ApiUse:
    name: str
    line: int
    family: str
    hip: str | None
    supported: bool
    reason: str = ""

    def __reduce__(self):  # a tree's uses cross from the workers by pickle: its values, not a dict each
        return ApiUse, (self.name, self.line, self.family, self.hip, self.supported, self.reason)


@dataclass
class Rewrite:
    line: int
    what: str  # e.g. "cudaMallocHost: added hipHostMallocDefault flags argument"


@dataclass
class Translation:
    text: str
    uses: list[ApiUse] = field(default_factory=list)
    rewrites: list[Rewrite] = field(default_factory=list)
    engine: str = ""
    tokens: list[Token] = field(default_factory=list)
    columns: tuple[list[str], list[str]] | None = None  # the tokens' kinds and texts, for the hazard scan
