"""Error-string calls the targeted HIP lacks (hipSPARSE and rocSPARSE have them since 6.0): an
inline switch over the status enumerators that this HIP has stands in for the call."""

from __future__ import annotations

from functools import lru_cache

from gpuparity.port import mappings

# name -> (HIP status type, enumerator prefix, library) per mode. The targeted HIP lacks the
# error-string call (hipSPARSE and rocSPARSE have it since 6.0), so an inline switch over the
# status enumerators that this HIP has takes its place.
STATUS_STRINGS = {
    "cusparseGetErrorString": {False: ("hipsparseStatus_t", "CUSPARSE_STATUS_", "hipSPARSE"),
                               True: ("rocsparse_status", "CUSPARSE_STATUS_", "rocSPARSE")},
    "cusparseGetErrorName": {False: ("hipsparseStatus_t", "CUSPARSE_STATUS_", "hipSPARSE"),
                             True: ("rocsparse_status", "CUSPARSE_STATUS_", "rocSPARSE")},
}


@lru_cache(maxsize=64)
def status_string_lambda(name: str, target: tuple[int, ...], roc: bool) -> str | None:
    """`[](hipsparseStatus_t s) -> const char* { switch (s) {...} }`: called with the original
    argument it gives the status name, as the missing call would."""
    spec = STATUS_STRINGS.get(name, {}).get(roc)
    if spec is None:
        return None
    type_name, prefix, library = spec
    cases = []
    seen = set()
    for cuda in mappings.load_table()["apis"]:
        if not cuda.startswith(prefix):
            continue
        res = mappings.resolve(cuda, target, roc)
        if res is None or not res.supported or not res.hip or res.hip in seen:
            continue
        seen.add(res.hip)
        cases.append(f'case {res.hip}: return "{res.hip}";')
    if not cases:
        return None
    return (f"[]({type_name} status_) -> const char* {{ switch (status_) {{ {' '.join(cases)} "
            f'default: return "unknown {library} status"; }} }}')
