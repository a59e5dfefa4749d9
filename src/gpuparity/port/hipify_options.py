"""HIPIFY's command-line conventions as translation options: what `port --experimental, --dnn,
-D, --skip-excluded, --amap, --hip-data-types` ask, in the Options fields translate reads.

One place for the mapping, so that the CLI and the HIPIFY-suite scorer (hipify_suite.options)
read a RUN line's options alike.
"""

from __future__ import annotations

import re

from gpuparity.errors import UserError
from gpuparity.validate import terminal_safe

_DEFINE = re.compile(r"[A-Za-z_]\w*(=.*)?", re.S)


def hipify_options(*, experimental: bool = True, dnn: str = "miopen", defines: list[str] | tuple[str, ...] = (),
                   skip_excluded: bool = False, amap: bool = False, hip_data_types: bool = False) -> dict:
    """Options fields (model.Options) for HIPIFY's options; --amap ("as much as possible")
    overrides --skip-excluded, as in hipify-clang."""
    if dnn not in ("miopen", "hipdnn"):
        raise UserError(f"--dnn must be 'miopen' or 'hipdnn', not {terminal_safe(dnn)!r}")
    for d in defines:
        if not _DEFINE.fullmatch(d) or "\n" in d:
            raise UserError(f"-D {terminal_safe(d)!r}: give NAME or NAME=VALUE (NAME a C identifier)")
    return {"experimental": experimental, "dnn": dnn, "defines": tuple(defines),
            "skip_excluded": skip_excluded and not amap, "hip_data_types": hip_data_types}
