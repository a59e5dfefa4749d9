"""--roc: CUDA's complex, half and bfloat16 element types as the ROCm libraries' own types.

rocBLAS, rocSOLVER and rocSPARSE take rocblas_float_complex / rocblas_half ... pointers, not
HIP's hipFloatComplex / __half. In a host-only library file (no kernels, no cuComplex helper
calls: the types are storage) the declarations take the library's type names, as HIPIFY writes
them, and the calls need no casts. Elsewhere (kernels use cuCaddf, __hadd ... on the same
values) the HIP types stay and the calls cast their pointers (roc_rewrites.py).
rocSPARSE has its own complex types: a file that uses only cuSPARSE gets typedefs that make
HIPIFY's rocblas_* names rocSPARSE's (rocBLAS, which defines them, is not included there).
"""

from __future__ import annotations

import re

from gpuparity.port.tokens import Token

# CUDA type -> the rocBLAS type (rocSOLVER uses rocBLAS's); half and bfloat16 only with cuBLAS.
COMPLEX = {"cuComplex": "rocblas_float_complex", "cuFloatComplex": "rocblas_float_complex",
           "cuDoubleComplex": "rocblas_double_complex"}
REAL16 = {"__half": "rocblas_half", "__nv_bfloat16": "rocblas_bfloat16"}
TYPES = set(COMPLEX) | set(REAL16)
_HELPER = re.compile(r"(make_cu(Float|Double)?Complex|cuC(add|sub|mul|div|real|imag|abs|conj|fma)f?|cuComplex(Float|Double)"
                     r"To(Float|Double))$")
_DEVICE = {"__global__", "__device__"}
_BLAS_FAMILIES = {"cublas", "cusolver"}


def element_map(toks: list[Token], family_of) -> dict[str, str]:
    """The renames for this file ({} where the HIP types must stay). family_of: name -> API family."""
    families = set()
    for t in toks:
        if t.kind != "id":
            continue
        if t.text in _DEVICE or _HELPER.match(t.text):
            return {}
        family = family_of(t.text)
        if family in ("cublas", "cusolver", "cusparse"):
            families.add(family)
    if not families:
        return {}
    out = dict(COMPLEX)
    if "cublas" in families:
        out.update(REAL16)
    return out


def uses_only_sparse(toks: list[Token], family_of) -> bool:
    return not any(t.kind == "id" and family_of(t.text) in _BLAS_FAMILIES for t in toks)


def sparse_prelude(nl: str) -> str:
    return (f"#ifndef GPUPARITY_ROCSPARSE_COMPLEX{nl}#define GPUPARITY_ROCSPARSE_COMPLEX{nl}"
            f"// cuComplex in rocSPARSE's own complex types, under the rocBLAS names this port uses{nl}"
            f"typedef rocsparse_float_complex rocblas_float_complex;{nl}"
            f"typedef rocsparse_double_complex rocblas_double_complex;{nl}#endif{nl}")
