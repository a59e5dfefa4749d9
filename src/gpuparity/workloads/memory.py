"""Memory bandwidth: STREAM-style kernels over device memory, and pinned host<->device copies.

Device kernels (fp32 arrays each far above the last-level cache), bytes = read + written:
  copy   c = a          1 read  1 write
  scale  b = s*c        1 read  1 write
  add    c = a + b      2 read  1 write
  triad  a = b + s*c    2 read  1 write
  read   sum(a)         1 read  (output is one scalar)
Host transfers (GPU only): h2d / d2h from pinned host memory; bytes = bytes transferred
(the PCIe / C2C link, not HBM, is the limit, so they have no % of spec).
Array sizes are suite constants per device class, never read from the device (a key must mean
the same work on every GPU): on GPUs every array is >= 4x the largest last-level cache the spec
table knows (an MI300-class 256 MB Infinity Cache), so each pass streams from memory on every
GPU; on CPUs the quick suite stays small enough to finish in seconds, and the result's info says
how the arrays compare with this machine's cache (with a warning below 4x). The gate checks every
element of the output, not a head (copy, scale, add: bit-identical to the correctly rounded
result; triad within one rounding).
"""

from __future__ import annotations

from gpuparity.measure.gates import elementwise
from gpuparity.measure.operands import llc_bytes
from gpuparity.platform.detect import INFINITY_CACHE_BYTES
from gpuparity.results.work import MEMORY_KERNELS, MEMORY_TRANSFERS, memory_bytes
from gpuparity.workloads.base import Context, Prepared, Workload

# Arrays touched per element (fp32 = 4 bytes each): the work's, results/work.py
KERNELS = MEMORY_KERNELS
TRANSFERS = MEMORY_TRANSFERS
SCALAR = 3.0
OVER_LLC = 4
FP32_TOL = 2.0**-23   # one fp32 rounding, relative (a fused multiply-add vs two roundings)
# the largest GPU last-level cache of the spec table: the MI300/MI350-class Infinity Cache (NVIDIA's
# L2s are smaller: 50 MB on H100/H200); one table of caches, so a new part moves the size with it
LARGEST_LLC = max(INFINITY_CACHE_BYTES.values())
# fp32 elements per array, per suite: GPUs 1 GiB (= 4 x 256 MB) and more; CPUs 256 MiB in quick
# (a 2-core CPU copies that in ~0.1 s), 1 GiB otherwise.
GPU_ELEMENTS = {"quick": OVER_LLC * LARGEST_LLC // 4, "standard": 2**29, "full": 2**29, "comm": 2**28}
CPU_ELEMENTS = {"quick": 2**26, "standard": 2**28, "full": 2**28, "comm": 2**26}


def array_elems(ctx: Context, suite: str) -> int:
    """fp32 elements per array: the suite's constant for the device class (CPU or GPU)."""
    return (CPU_ELEMENTS if ctx.device == "cpu" else GPU_ELEMENTS).get(suite, GPU_ELEMENTS["quick"])


def cache_info(n: int, ctx: Context) -> dict:
    """How one array of n fp32 elements compares with this device's last-level cache (info only)."""
    llc = llc_bytes(ctx.fingerprint, ctx.device)
    info = {"array_bytes": n * 4, "llc_bytes": llc, "array_over_llc": round(n * 4 / llc, 2)}
    if n * 4 < OVER_LLC * llc:
        info["warning"] = (f"arrays are {n * 4 / llc:.2g}x this device's last-level cache (< {OVER_LLC}x): "
                           "part of each pass may hit the cache")
    return info


class Memory(Workload):
    name = "memory"
    category = "kernel"
    description = ("copy, scale, add, triad and a read-only sum over memory far above the last-level "
                   "cache (GB/s read+written, % of spec); pinned host<->device copies on GPUs")
    axes = {"op": ", ".join([*KERNELS, *TRANSFERS]), "elements": "fp32 elements per array"}
    choices = {"op": (*KERNELS, *TRANSFERS)}

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        n = array_elems(ctx, suite)
        return [{"op": op, "elements": n, "dtype": "fp32"} for op in [*KERNELS, *TRANSFERS]]

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        if params["op"] in TRANSFERS and ctx.device == "cpu":
            return False, "host<->device copies need a GPU; on a CPU host memory is device memory"
        if params["op"] not in KERNELS and params["op"] not in TRANSFERS:
            return False, f"unknown op {params['op']}"
        return True, ""

    def prepare(self, params: dict, ctx: Context) -> Prepared:
        if params["op"] in TRANSFERS:
            return _transfer(params, ctx)
        return _kernel(params, ctx)


def _kernel(params: dict, ctx: Context) -> Prepared:
    import torch

    n, op, dev = params["elements"], params["op"], ctx.device
    gen = torch.Generator(device=dev).manual_seed(0)
    a = torch.rand(n, generator=gen, device=dev)
    b, c = 1.0 - a, a.flip(0)       # random too, at memory speed rather than generator speed
    s = SCALAR

    ops = {
        # fn, output, reference computed apart from the inputs (which the op leaves alone), tolerance:
        # copy, one multiply and one add are correctly rounded in IEEE fp32, so every element must be
        # identical; triad may fuse its multiply-add: within one rounding.
        "copy": (lambda: c.copy_(a), c, lambda: a, 0.0),
        "scale": (lambda: torch.mul(c, s, out=b), b, lambda: c * s, 0.0),
        "add": (lambda: torch.add(a, b, out=c), c, lambda: a + b, 0.0),
        "triad": (lambda: torch.add(b, c, alpha=s, out=a), a, lambda: b + c * s, FP32_TOL),
    }
    total = torch.zeros((), device=dev)
    if op == "read":
        def fn():
            torch.sum(a, 0, out=total)

        def check():
            total.fill_(float("nan"))
            fn()
            ref = a.double().sum()
            err = abs(float(total) - float(ref)) / float(ref)
            return err < 1e-5, f"relative error {err:.1e} vs the fp64 sum of all {n} elements"
    else:
        fn, out, reference, tol = ops[op]

        def check():
            ref = reference()
            out.fill_(float("nan"))
            fn()
            return elementwise(out, ref, tol)

    return Prepared(fn=fn, work={"bytes": memory_bytes(op, n)}, peak="bytes:hbm", check=check,
                    info={"arrays_bytes": 3 * n * 4, **cache_info(n, ctx)})


def _transfer(params: dict, ctx: Context) -> Prepared:
    import torch

    n, op, dev = params["elements"], params["op"], ctx.device
    host = torch.rand(n).pin_memory()
    device = torch.rand(n, device=dev)
    if op == "h2d":
        def fn():
            device.copy_(host, non_blocking=True)

        def check():
            device.fill_(float("nan"))
            fn()
            ok = bool(torch.equal(device, host.to(dev)))
            return ok, f"all {n} elements copied exactly" if ok else "copy differs"
    else:
        def fn():
            host.copy_(device, non_blocking=True)

        def check():
            host.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            ok = bool(torch.equal(device, host.to(dev)))
            return ok, f"all {n} elements copied exactly" if ok else "copy differs"
    return Prepared(fn=fn, work={"bytes": memory_bytes(op, n)}, peak="bytes:host", check=check,
                    info={"host_memory": "pinned", "counted": "bytes transferred"})


WORKLOADS = [Memory()]
