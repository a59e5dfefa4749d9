"""Memory bandwidth: STREAM-style kernels over device memory, and pinned host<->device copies.

Device kernels (fp32 arrays each far above the last-level cache), bytes = read + written:
  copy   c = a          1 read  1 write
  scale  b = s*c        1 read  1 write
  add    c = a + b      2 read  1 write
  triad  a = b + s*c    2 read  1 write
  read   sum(a)         1 read  (output is one scalar)
Host transfers (GPU only): h2d / d2h from pinned host memory; bytes = bytes transferred
(the PCIe / C2C link, not HBM, is the limit, so they have no % of spec).
"""

from __future__ import annotations

from gpuparity.workloads.base import Context, Prepared, Workload

# Arrays touched per element (fp32 = 4 bytes each).
KERNELS = {"copy": 2, "scale": 2, "add": 3, "triad": 3, "read": 1}
TRANSFERS = ("h2d", "d2h")
SCALAR = 3.0
CHECK_ELEMS = 4096


def array_elems(ctx: Context, suite: str) -> int:
    """Each array far above the last-level cache (4x on CPU; 1 GiB per array on a GPU)."""
    if ctx.device == "cpu":
        llc = (ctx.fingerprint.get("cpu") or {}).get("llc_bytes") or 32 * 2**20
        return max(4 * llc, 64 * 2**20) // 4
    return (2**30 if suite != "quick" else 2**28) // 4


class Memory(Workload):
    name = "memory"
    category = "kernel"
    description = ("copy, scale, add, triad and a read-only sum over memory far above the last-level "
                   "cache (GB/s read+written, % of spec); pinned host<->device copies on GPUs")
    axes = {"op": ", ".join([*KERNELS, *TRANSFERS]), "elements": "fp32 elements per array"}

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
    head = slice(0, CHECK_ELEMS)
    ops = {
        # fn, (output, fp64 reference of its head)
        "copy": (lambda: c.copy_(a), lambda: (c, a[head].double())),
        "scale": (lambda: torch.mul(c, s, out=b), lambda: (b, s * c[head].double())),
        "add": (lambda: torch.add(a, b, out=c), lambda: (c, a[head].double() + b[head].double())),
        "triad": (lambda: torch.add(b, c, alpha=s, out=a),
                  lambda: (a, b[head].double() + s * c[head].double())),
    }
    total = torch.zeros((), device=dev)
    if op == "read":
        def fn():
            torch.sum(a, 0, out=total)

        def check():
            fn()
            ref = a.double().sum()
            err = abs(float(total) - float(ref)) / float(ref)
            return err < 1e-4, f"relative error {err:.1e} vs fp64 sum"
    else:
        fn, expect = ops[op]

        def check():
            fn()
            out, ref = expect()
            err = float((out[head].double() - ref).abs().max())
            return err < 1e-5, f"max abs error {err:.1e} vs fp64"

    return Prepared(fn=fn, work={"bytes": float(KERNELS[op] * n * 4)}, peak="bytes:hbm", check=check,
                    info={"arrays_bytes": 3 * n * 4})


def _transfer(params: dict, ctx: Context) -> Prepared:
    import torch

    n, op, dev = params["elements"], params["op"], ctx.device
    host = torch.rand(n).pin_memory()
    device = torch.rand(n, device=dev)
    if op == "h2d":
        def fn():
            device.copy_(host, non_blocking=True)

        def check():
            fn()
            ok = bool(torch.equal(device[:CHECK_ELEMS].cpu(), host[:CHECK_ELEMS]))
            return ok, "copy exact" if ok else "copy differs"
    else:
        def fn():
            host.copy_(device, non_blocking=True)

        def check():
            fn()
            torch.cuda.synchronize()
            ok = bool(torch.equal(device[:CHECK_ELEMS].cpu(), host[:CHECK_ELEMS]))
            return ok, "copy exact" if ok else "copy differs"
    return Prepared(fn=fn, work={"bytes": float(n * 4)}, peak="bytes:host", check=check,
                    info={"host_memory": "pinned", "counted": "bytes transferred"})


WORKLOADS = [Memory()]
