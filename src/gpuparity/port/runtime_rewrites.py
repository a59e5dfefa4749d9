"""HIP runtime calls whose HIP counterpart takes other arguments: the call is rewritten (the
symbol and function-address calls, the C++ overloads HIP names apart, an added flags argument)."""

from __future__ import annotations

from gpuparity.port.call_site import Args, CallSite, Rewrite


def _host_malloc(site: CallSite, i: int, args: Args, close: int) -> str | None:
    if len(args) == 2:
        site.ed.insert(site.toks[close].start, ", hipHostMallocDefault")
        return "added the hipHostMallocDefault flags argument"
    return None


def _wrap(site: CallSite, rng: tuple[int, int], before: str, after: str) -> None:
    site.ed.insert(site.toks[rng[0]].start, before)
    site.ed.insert(site.toks[rng[1]].end, after)


def _cast_func_arg(index: int) -> Rewrite:
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) <= index or args[index][0] > args[index][1]:
            return None
        arg = site.arg(args[index])
        if "void" in arg or "cast" in arg:
            return None
        _wrap(site, args[index], "reinterpret_cast<const void*>(", ")")
        return "kernel argument cast to const void* (HIP takes a function address)"
    return rewrite


def _symbol_arg(index: int) -> Rewrite:
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) <= index or args[index][0] > args[index][1] or "HIP_SYMBOL" in site.arg(args[index]):
            return None
        _wrap(site, args[index], "HIP_SYMBOL(", ")")
        return "symbol wrapped in HIP_SYMBOL()"
    return rewrite


_NULL = {"0", "NULL", "nullptr", "0L", "0UL"}


def _occupancy(n_args: int) -> Rewrite:
    """cuOccupancyMaxPotentialBlockSize*(grid, block, f, blockSizeToDynamicSMemSize, dynSmem, ...):
    HIP's takes no per-block-size callback (dynSmem serves every block size): it is dropped."""
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) != n_args:
            return None
        callback = site.arg(args[3])
        site.ed.replace(site.toks[args[3][0]].start, site.toks[args[4][0]].start, "")
        site.consume(args[3])
        what = "blockSizeToDynamicSMemSize dropped (HIP takes only dynamicSMemSize)"
        if callback.strip() not in _NULL:
            what += f": {callback} is not called, so dynamicSMemSize must cover every block size"
        return what
    return rewrite


def _overload(name: str, arity: tuple[int, ...], pad: str = "") -> Rewrite:
    """A C++ overload (or CUDA 12 form) with these argument counts is another HIP call; with
    the fewest, pad stands in for a defaulted last argument HIP does not default."""
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) not in arity:
            return None
        tok = site.toks[i]
        site.ed.replace(tok.start, tok.end, name)
        if pad and len(args) == min(arity):
            site.ed.insert(site.toks[close].start, f", {pad}")
        return f"the {len(args)}-argument form -> {name}"
    return rewrite


def _driver_entry_point(site: CallSite, i: int, args: Args, close: int) -> str | None:
    """cudaGetDriverEntryPoint(symbol, pfn, flags[, status]) -> hipGetProcAddress(symbol, pfn,
    hipVersion, flags, status): the symbol as the HIP the code is built with defines it."""
    if len(args) not in (3, 4) or args[2][0] > args[2][1]:
        return None
    site.ed.insert(site.toks[args[2][0]].start, "HIP_VERSION_MAJOR * 100 + HIP_VERSION_MINOR, ")
    if len(args) == 3:
        site.ed.insert(site.toks[close].start, f", {site.null}")
    return "the HIP version argument added (the one built against)"


def _append_arg(n_args: int, text: str | None, why: str) -> Rewrite:
    """One more argument at the end (None: a null pointer)."""
    def rewrite(site: CallSite, i: int, args: Args, close: int) -> str | None:
        if len(args) != n_args:
            return None
        site.ed.insert(site.toks[close].start, f", {site.null if text is None else text}")
        return why
    return rewrite


ARG_REWRITES: dict[str, Rewrite] = {
    "cudaMallocHost": _host_malloc,
    # hipSPARSE's solve keeps cuSPARSE 11's buffer argument (cuSPARSE 12 holds it in the descriptor)
    "cusparseSpSM_solve": _append_arg(10, None, "externalBuffer added as nullptr (hipSPARSE's solve takes "
                                      "one: pass the buffer given to hipsparseSpSM_analysis where the HIP needs it)"),
    "cuOccupancyMaxPotentialBlockSize": _occupancy(6),
    "cuOccupancyMaxPotentialBlockSizeWithFlags": _occupancy(7),
    # CUDA 12's cudaGraphInstantiate(exec, graph[, flags]); hipGraphInstantiate keeps CUDA 11's five
    "cudaGraphInstantiate": _overload("hipGraphInstantiateWithFlags", (2, 3), "0"),
    "cudaEventCreate": _overload("hipEventCreateWithFlags", (2,)),  # cuda_runtime.h's C++ overload
    "cudaGetDriverEntryPoint": _driver_entry_point,
    "cudaFuncSetSharedMemConfig": _cast_func_arg(0),
    "cudaFuncSetAttribute": _cast_func_arg(0),
    "cudaFuncGetAttributes": _cast_func_arg(1),
    "cudaFuncSetCacheConfig": _cast_func_arg(0),
    "cudaLaunchKernel": _cast_func_arg(0),
    "cudaLaunchCooperativeKernel": _cast_func_arg(0),
    "cudaMemcpyToSymbol": _symbol_arg(0),
    "cudaMemcpyToSymbolAsync": _symbol_arg(0),
    "cudaMemcpyFromSymbol": _symbol_arg(1),
    "cudaMemcpyFromSymbolAsync": _symbol_arg(1),
    "cudaGetSymbolAddress": _symbol_arg(1),
    "cudaGetSymbolSize": _symbol_arg(1),
    # hipGraph*Symbol take the symbol's address too: (node, graph, deps, n, symbol, src, ...)
    "cudaGraphAddMemcpyNodeToSymbol": _symbol_arg(4),
    "cudaGraphAddMemcpyNodeFromSymbol": _symbol_arg(5),
    "cudaGraphMemcpyNodeSetParamsToSymbol": _symbol_arg(1),
    "cudaGraphMemcpyNodeSetParamsFromSymbol": _symbol_arg(2),
    "cudaGraphExecMemcpyNodeSetParamsToSymbol": _symbol_arg(2),
    "cudaGraphExecMemcpyNodeSetParamsFromSymbol": _symbol_arg(3),
}
