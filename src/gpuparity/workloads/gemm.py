"""Dense matrix multiply C = A @ B at each dtype the device has: FLOP = 2*M*N*K."""

from __future__ import annotations

from gpuparity.workloads.base import Context, Prepared, Workload
from gpuparity.workloads.dtypes import FLOAT_DTYPES, TOLERANCE, cpu_half_ok, gpu_has_units, torch_dtype

SIZES = {"quick": 1024, "standard": 8192, "full": 8192}
CPU_SIZES = {"quick": 1024, "standard": 2048, "full": 4096}
CPU_HALF_SIZE = 256  # emulated half precision on a CPU: keep it seconds, not minutes


class Gemm(Workload):
    name = "gemm"
    category = "kernel"
    description = "Square dense GEMM C = A @ B; TFLOP/s against the dense datasheet peak"
    axes = {"dtype": ", ".join(FLOAT_DTYPES), "m,n,k": "matrix sizes"}

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        n = (CPU_SIZES if ctx.device == "cpu" else SIZES)[suite]
        dtypes = ctx.options.get("dtypes") or FLOAT_DTYPES
        out = []
        for dt in dtypes:
            size = n
            if ctx.device == "cpu" and dt in ("bf16", "fp16") and not cpu_half_ok(dt, ctx)[0]:
                size = CPU_HALF_SIZE
            out.append({"m": size, "n": size, "k": size, "dtype": dt})
        return out

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        dt = params["dtype"]
        if dt not in TOLERANCE:
            return False, f"unknown dtype {dt}"
        if ctx.device == "cpu":
            if dt == "tf32":
                return False, "TF32 is a GPU tensor-core mode; a CPU has no TF32 units"
            if dt not in FLOAT_DTYPES:
                return False, f"{dt} GEMM is not measured on CPU"
            return True, ""
        return gpu_has_units(dt, ctx)

    def prepare(self, params: dict, ctx: Context) -> Prepared:
        import torch

        m, n, k, dt = params["m"], params["n"], params["k"], params["dtype"]
        dev = ctx.device
        tdt = torch_dtype(dt)
        gen = torch.Generator(device="cpu").manual_seed(0)
        a = torch.randn(m, k, generator=gen, dtype=torch.float32).to(dev, tdt)
        b = torch.randn(k, n, generator=gen, dtype=torch.float32).to(dev, tdt)
        out = torch.empty(m, n, device=dev, dtype=tdt)
        prev_tf32 = torch.backends.cuda.matmul.allow_tf32 if dev != "cpu" else None
        if dev != "cpu":
            torch.backends.cuda.matmul.allow_tf32 = dt == "tf32"

        def fn():
            torch.mm(a, b, out=out)

        def check():
            rows = min(m, 64)
            fn()
            ref = a[:rows].double() @ b.double()
            err = float((out[:rows].double() - ref).norm() / ref.norm())
            ok = err <= TOLERANCE[dt]
            return ok, f"relative error {err:.2e} vs fp64 (tolerance {TOLERANCE[dt]:.0e})"

        def teardown():
            if prev_tf32 is not None:
                torch.backends.cuda.matmul.allow_tf32 = prev_tf32

        info = {}
        if ctx.backend == "rocm":
            info["tunableop"] = ctx.fingerprint.get("tunableop", False)
        return Prepared(fn=fn, work={"flop": 2.0 * m * n * k}, peak=f"flop:{dt}", check=check,
                        info=info, teardown=teardown)


WORKLOADS = [Gemm()]
