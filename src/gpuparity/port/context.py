"""The state one file's translation carries from token to token (what translate.py's walk and
each of its steps read and write), and the token steps they share."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpuparity.port import includes, mappings
from gpuparity.port.call_site import CallSite
from gpuparity.port.edits import Editor
from gpuparity.port.model import Options, Translation
from gpuparity.port.tokens import Token

MEMBER_ACCESS = {".", "->", ".*", "->*"}


@dataclass
class Context:
    """One file's translation in progress."""
    text: str
    toks: list[Token]
    ed: Editor
    opts: Options
    result: Translation
    site: CallSite
    runtime_included: bool = False  # an #include that is (or becomes) the HIP runtime
    first_include: int = -1  # offset of the first #include directive
    conditions: includes.Conditions = field(default_factory=includes.Conditions)
    included: includes.Included = field(default_factory=includes.Included)
    cublas_v1: bool | None = None  # decided at the first cuBLAS name
    sparse_datatypes: bool | None = None  # --roc: CUDA data types go to rocSPARSE's enum
    cublas_include_end: int = -1  # end of the #include <cublas.h> line (the v1 prelude goes there)
    sparse_include_end: int = -1  # end of the rocSPARSE #include line (--roc: its complex typedefs go there)
    roc_elements: dict[str, str] = field(default_factory=dict)  # --roc: element type renames (roc_types.py)
    roc_complex: bool = False  # a complex type was renamed
    v1_rewritten: bool = False  # a cuBLAS v1 call was rewritten: the file needs the prelude
    uses_dnn: bool = False  # a cuDNN perf-struct type was seen: its members may need renaming
    left_end: int = -1  # last token of the call left as written for a human (its arguments are not ported)
    left_call: str = ""  # that call's name
    resolved: dict[str, mappings.Resolution] = field(default_factory=dict)  # resolve.py's answer per name
    names: set[str] = field(default_factory=set)  # the file's distinct token texts (its identifiers among them)
    headers: set[str] = field(default_factory=set)  # the header names it includes, without <> or ""


def prev_code(toks: list[Token], i: int) -> int:
    """Index of the nearest non-comment token before i, or -1."""
    j = i - 1
    while j >= 0 and toks[j].kind == "comment":
        j -= 1
    return j


def next_code(toks: list[Token], i: int) -> int:
    j = i + 1
    while j < len(toks) and toks[j].kind == "comment":
        j += 1
    return j
