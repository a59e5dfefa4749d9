"""Power telemetry check on a real device: bf16 GEMM (fp32 1024 on a CPU) measured for a few
seconds through the normal workload path, then mean power, J per TFLOP, and the energy from
integrated power vs the hardware energy counter (NVML total energy / amdsmi accumulator).

    python bench/power_check.py [--seconds 8] [--size 8192]

Exit status 0 when the telemetry is valid and the two energies agree within 5%; 1 otherwise;
2 when no power sampler is available here (the reason is printed).
"""

from __future__ import annotations

import argparse
import sys


def power_run(seconds: float = 8.0, size: int = 8192, dtype: str = "bf16") -> tuple[dict, dict]:
    """(context, result) of a bf16 GEMM (fp32 1024 on a CPU) timed for a fixed-length window."""
    from gpuparity.execute.runner import build_context
    from gpuparity.measure.loop import LoopConfig
    from gpuparity.workloads.base import get

    ctx = build_context("standard", {})
    gpu = ctx.device != "cpu"
    n, dtype = (size, dtype) if gpu else (1024, "fp32")
    # A fixed-length window: the noise target is met at once, the minimum time decides.
    ctx.loop = LoopConfig(warmup_s=1.0 if gpu else 0.1, warmup_max_s=3.0 if gpu else 0.3, min_samples=10,
                          max_samples=100000, min_time_s=seconds, max_time_s=seconds * 2, target_noise=1.0,
                          min_block_s=1e-3 if gpu else 0.0)
    return ctx, get("gemm").execute({"m": n, "n": n, "k": n, "dtype": dtype}, ctx)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=8.0, help="timed window length")
    ap.add_argument("--size", type=int, default=8192, help="square GEMM size on a GPU")
    ap.add_argument("--dtype", default="bf16")
    args = ap.parse_args()

    ctx, result = power_run(args.seconds, args.size, args.dtype)
    fp = ctx.fingerprint
    print(f"device: {fp.get('product')} ({fp.get('backend')}), telemetry: {fp.get('telemetry')}")
    for dev in fp.get("management") or []:
        print(f"management: power limit {dev.get('power_limit_w')} W, max SM clock {dev.get('max_sm_clock_mhz')} MHz")
    if result["status"] != "ok":
        print(f"gemm {result['dtype']}: {result['status']}: {result['reason']}")
        return 1
    t = result["telemetry"] or {}
    tflops = result["derived"].get("tflops")
    print(f"gemm {result['dtype']} {result['params']['m']}^3: {tflops:.1f} TFLOP/s, {len(result['samples'])} samples x "
          f"{result['info']['reps_per_sample']} reps ({result['info']['method']})")
    if t.get("method") == "none":
        print(f"energy: {t.get('energy')}")
        return 2

    def f(key, fmt=".4g"):
        v = t.get(key)
        return format(v, fmt) if isinstance(v, (int, float)) else str(v)

    print(f"method: {t['method']}  valid: {t['valid']}  reasons: {t['reasons']}")
    print(f"window: {f('window_s')} s ({f('busy_s')} s busy in {t.get('intervals')} intervals), "
          f"{t.get('invocations')} invocations, {f('n_samples')} samples at {f('sample_hz', '.1f')} Hz")
    print(f"mean power: {f('mean_power_w', '.1f')} W")
    print(f"J per TFLOP: {f('j_per_tflop')}   TFLOP/s per W: {f('tflops_per_w')}")
    print(f"energy integrated: {f('energy_j', '.2f')} J   counter: {f('energy_counter_j', '.2f')} J   "
          f"agreement: {100 * t['counter_agreement']:+.2f}%" if t.get("counter_agreement") is not None
          else f"energy integrated: {f('energy_j', '.2f')} J   counter: {f('energy_counter_j')}")
    print(f"SM clock mean/max: {f('mean_clock_mhz', '.0f')}/{f('max_clock_mhz', '.0f')} MHz   "
          f"throttled share: {f('throttled_share', '.2f')} {t.get('throttle_reasons') or ''}   max temp: {f('max_temp_c')} C")
    agree = t.get("counter_agreement")
    ok = bool(t["valid"]) and (agree is None or abs(agree) <= 0.05)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
