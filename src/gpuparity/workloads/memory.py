"""STREAM-style memory bandwidth: copy and triad, counting bytes read plus written."""

from __future__ import annotations

from gpuparity.workloads.base import Context, Prepared, Workload

# Bytes moved per element of one array (fp32): copy c=a reads 1 writes 1; triad a=b+s*c reads 2 writes 1.
KERNELS = {"copy": 2, "triad": 3}


def array_elems(ctx: Context, suite: str) -> int:
    """Each array far above the last-level cache (4x on CPU; 1 GiB per array on a GPU)."""
    if ctx.device == "cpu":
        llc = (ctx.fingerprint.get("cpu") or {}).get("llc_bytes") or 32 * 2**20
        return max(4 * llc, 64 * 2**20) // 4
    return (2**30 if suite != "quick" else 2**28) // 4


class Memory(Workload):
    name = "memory"
    category = "kernel"
    description = "copy and triad over device memory far above the last-level cache; GB/s read+written"
    axes = {"op": ", ".join(KERNELS), "elements": "fp32 elements per array"}

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        n = array_elems(ctx, suite)
        return [{"op": op, "elements": n, "dtype": "fp32"} for op in KERNELS]

    def prepare(self, params: dict, ctx: Context) -> Prepared:
        import torch

        n, op, dev = params["elements"], params["op"], ctx.device
        a = torch.rand(n, device=dev)
        b = torch.rand(n, device=dev)
        c = torch.rand(n, device=dev)
        scalar = 3.0
        if op == "copy":
            def fn():
                c.copy_(a)

            def check():
                fn()
                ok = bool(torch.equal(c[:4096], a[:4096]))
                return ok, "copy exact" if ok else "copy differs"
        else:
            def fn():
                torch.add(b, c, alpha=scalar, out=a)

            def check():
                fn()
                ref = b[:4096].double() + scalar * c[:4096].double()
                err = float((a[:4096].double() - ref).abs().max())
                return err < 1e-5, f"max abs error {err:.1e} vs fp64"
        return Prepared(fn=fn, work={"bytes": float(KERNELS[op] * n * 4)}, peak="bytes", check=check)


WORKLOADS = [Memory()]
