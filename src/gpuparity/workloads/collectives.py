"""Collectives across ranks under torchrun: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast.

Figures follow nccl-tests (doc/PERFORMANCE.md) so that they can be set beside all_reduce_perf
and rccl-tests output:
- size S is the whole per-rank buffer: the buffer for all_reduce and broadcast, the gathered
  output for all_gather (n x the input), the input for reduce_scatter (n x the output), the send
  buffer for all_to_all;
- algbw = S / time; busbw = algbw x a factor that makes it comparable with the link's peak:
  all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast 1;
- time per iteration is the slowest rank's (MAX over ranks per sample, as `all_reduce_perf -a 3`;
  nccl-tests' default averages the ranks instead).

Every rank runs the same samples: before each sample one all_reduce MAX carries rank 0's stop
decision and lines the ranks up (the barrier); at the end one more gathers the samples. The
metric is busbw in GB/s (the work counts S x the bus factor), measured against the fabric's
per-direction peak within a node, and against no peak across nodes (the NIC's figure is in no
datasheet row); algbw, busbw and latency are also in `derived`. Timing blocks follow the loop's
one rule (measure.loop.block_reps), never the vendor-dependent measured event overhead.

Sizes are the suite's (1 KB up to MAX_BYTES per device class), never cut to the device's memory:
a size whose buffers would take more than 1/8 of the smallest GPU's memory in the job is skipped
with the reason, so every job runs (and compares) the same keys.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

from gpuparity.errors import UserError
from gpuparity.platform import dist

# bandwidths live with the figures, the buffer size and bus factor with the work (import recomputes
# both with them); kept importable here
from gpuparity.results.figure import bandwidths, derive, fill_workload_figures  # noqa: F401
from gpuparity.results.schema import mark
from gpuparity.results.work import COLLECTIVE_ELEMENT_BYTES, bus_factor, collective_size, work_of  # noqa: F401
from gpuparity.workloads.base import Context, Workload, telemetry_window

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")
MIN_BYTES = 1024
MAX_BYTES = {"gpu": 2**30, "cpu": 4 * 2**20}   # gloo on a few CPU cores: keep the sweep short
SIZE_FACTOR = 4
DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
LAUNCH_HINT = "torchrun --nproc-per-node N -m gpuparity run --suite comm"


def parse_bytes(text) -> int:
    """'64K', '4M', '1G', '1048576' -> bytes (powers of two)."""
    s = str(text).strip().upper().removesuffix("B").removesuffix("I")
    mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(s[-1:], 1)
    try:
        value = int(float(s[:-1] if mult > 1 else s) * mult)
    except ValueError:
        raise UserError(f"not a size: '{text}' (use e.g. 64K, 4M, 1G)") from None
    if value < 1:
        raise UserError(f"size must be positive: '{text}'")
    return value


def sizes(lo: int, hi: int, factor: int = SIZE_FACTOR) -> list[int]:
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= factor
    return out


def comm_loop(cfg, device: str):
    """The suite's loop settings, capped per message size: a sweep has dozens of cases."""
    cap = 0.5 if device == "cpu" else 3.0
    return replace(cfg, warmup_s=min(cfg.warmup_s, 0.1), min_time_s=min(cfg.min_time_s, 0.1),
                   max_time_s=min(cfg.max_time_s, cap))


def measure_synchronized(fn, device: str, cfg, active: bool = True, on_sample=None):
    """Time `fn` on every rank with the same number of samples; samples are the slowest rank's.

    Ranks with active=False (outside a subgroup) take part in the line-up collectives only.
    on_sample(n) runs after each timed block (telemetry marks). Returns (samples,
    reps_per_sample, timed_out, warmup_invocations).
    """
    from gpuparity.measure.loop import Timer, block_reps
    from gpuparity.measure.stats import relative_noise

    timer = Timer(device)

    def block(reps: int) -> float:
        dist.barrier()
        if not active:
            return 0.0
        timer.sync()
        return timer.time_block(fn, reps)

    block(1)                                          # first call: connections, allocator
    first = dist.reduce_max([block(1)])[0]
    warm = max(2, min(1000, math.ceil(cfg.warmup_s / max(first, 1e-9))))
    per_call = dist.reduce_max([block(warm) / warm])[0]
    # Blocks sized by the loop's one rule (measure.loop.block_reps: at least min_block_s of device
    # time, the clock's cost under its budget; device events cost nothing inside a block), never
    # by the measured event overhead, which differs by vendor and would time small messages in
    # other regimes on the two. The same reps on every rank.
    reps = int(dist.reduce_max([float(block_reps(per_call, cfg, timer.clock))])[0])

    samples: list[float] = []
    timed_out, t0 = False, time.perf_counter()
    while True:
        samples.append(block(reps) / reps)
        if on_sample:
            on_sample(len(samples))
        stop = 0.0
        if dist.is_writer():
            elapsed = time.perf_counter() - t0
            n = len(samples)
            if n >= cfg.min_samples and elapsed >= cfg.min_time_s and relative_noise(samples) <= cfg.target_noise:
                stop = 1.0
            elif n >= max(cfg.max_samples, cfg.min_samples):
                stop = 1.0
            elif elapsed >= cfg.max_time_s and n >= 2:
                stop, timed_out = 1.0, True
        if dist.reduce_max([stop])[0]:               # also the line-up before the next sample
            break
    timed_out = bool(dist.reduce_max([float(timed_out)])[0])
    return dist.reduce_max(samples), reps, timed_out, warm + 2


class Collectives(Workload):
    name = "collectives"
    category = "comm"
    description = "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast across torchrun ranks; algbw and busbw"
    axes = {"op": ", ".join(OPS), "bytes": "per-rank buffer (nccl-tests size), 1 KB up",
            "ranks": "world size", "nodes": "nodes in the job",
            "ops": "collectives to run (comma list)", "min_bytes": "smallest buffer (e.g. 1K)",
            "max_bytes": "largest buffer (e.g. 1G)"}
    choices = {"op": OPS}
    suites = ("comm",)

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        opts = ctx.options or {}
        ops = [o.strip() for o in str(opts.get("ops", ",".join(OPS))).split(",") if o.strip()]
        for op in ops:
            if op not in OPS:
                raise UserError(f"unknown collective '{op}'; choose from {', '.join(OPS)}")
        dtypes = [d for d in opts.get("dtypes") or ["fp32"] if d in DTYPES] or ["fp32"]
        n, nodes = dist.world_size(), dist.nodes()
        if not dist.initialized():
            # One placeholder per op: recorded as skipped with the way to launch it.
            return [{"op": op, "bytes": MIN_BYTES, "ranks": n, "nodes": nodes, "dtype": "fp32"} for op in ops]
        hi = parse_bytes(opts["max_bytes"]) if "max_bytes" in opts else MAX_BYTES[
            "cpu" if ctx.device == "cpu" else "gpu"]
        lo = parse_bytes(opts.get("min_bytes", MIN_BYTES))
        return [{"op": op, "bytes": s, "ranks": n, "nodes": nodes, "dtype": dt}
                for dt in dtypes for op in ops for s in sizes(lo, hi)]

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        if not dist.initialized():
            return False, f"needs 2 or more ranks: launch with `{LAUNCH_HINT}`"
        if params["ranks"] != dist.world_size():
            return False, f"planned for {params['ranks']} ranks, job has {dist.world_size()}"
        budget = self.memory_budget(ctx)
        if budget is not None and 2 * params["bytes"] > budget:
            return False, (f"{params['bytes']} B per buffer: in and out buffers would take more than 1/8 of "
                           f"the smallest GPU's memory in the job ({budget * 8 / 1e9:.0f} GB)")
        return True, ""

    def memory_budget(self, ctx: Context) -> float | None:
        """1/8 of the smallest GPU's memory in the job (in + out buffers plus NCCL's own stay under
        it); read once, the same on every rank (a collective: every rank judges every case in
        the same order). None on CPUs."""
        if ctx.device == "cpu":
            return None
        budgets = self.__dict__.setdefault("_budgets", {})
        which = (ctx.planned, ctx.fingerprint.get("product"), ctx.fingerprint.get("memory_bytes"))
        if which not in budgets:
            if ctx.planned:
                total = float(ctx.fingerprint.get("memory_bytes") or 0)
            else:
                import torch

                total = float(torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory)
            budgets[which] = (dist.reduce_min(total / 8) if dist.initialized() and not ctx.planned else total / 8) or None
        return budgets[which]

    def execute(self, params: dict, ctx: Context) -> dict:
        result, ok = self.begin(params, ctx)
        if not ok:
            return result
        op, n = params["op"], dist.world_size()
        size = collective_size(op, params["bytes"], params["dtype"], n)     # results/work.py: as import checks it
        call, buffers, count = _setup(op, size, params["dtype"], n)
        backend = dist.backend()
        result["info"].update(
            backend=backend, library=_library(ctx, backend), world_size=n, nodes=params["nodes"],
            local_world_size=dist.local_world_size(), size_bytes=size, elements=count,
            aggregation="slowest rank per sample (MAX over ranks)",
        )
        try:
            good, detail = _check(op, call, buffers, n)
        except (RuntimeError, NotImplementedError) as exc:  # raised alike on every rank
            msg = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            return mark(result, "skipped", f"{backend} lacks {op} here: {msg}")
        bad = dist.reduce_max([0.0 if good else 1.0])[0]
        result["info"]["check"] = detail
        if bad:
            return mark(result, "failed", f"wrong result on some rank: {detail}")
        for t in buffers:
            t.uniform_()                              # never time zeros
        # Bus bytes: the metric is nccl-tests' bus bandwidth (algbw x bus factor), the figure that
        # compares with the fabric's per-direction bandwidth whatever the collective and rank count.
        result["work"] = work_of(self.name, params)    # size x bus factor (results/work.py)
        measure_into(result, call, ctx)
        derive(result, peak_kind(params["nodes"]), ctx.spec)
        if params["nodes"] > 1:
            result["info"]["peak_note"] = MULTI_NODE_NOTE
        fill_workload_figures(result)       # algbw, busbw, latency from the median time (results.figure)
        return result

    def merge_trials(self, trials: list[dict], ctx: Context) -> dict:
        """The base merge, then the bandwidths from the median of all trials' samples."""
        merged = super().merge_trials(trials, ctx)
        if merged["status"] == "ok":
            fill_workload_figures(merged)
        return merged


MULTI_NODE_NOTE = ("multi-node: scored against no peak (the NVLink / XGMI figure is within a node, and the "
                   "datasheets hold no NIC figure)")


def peak_kind(nodes: int) -> str:
    """What a collective's bus bandwidth is measured against: the GPU fabric within one node; across
    nodes the NIC, which no datasheet row holds (platform.specs.peak_for: no % of peak)."""
    return "bytes:interconnect" if nodes <= 1 else "bytes:nic"


def measure_into(result: dict, fn, ctx: Context, active: bool = True) -> None:
    """measure_synchronized inside the telemetry window; fills samples, summary and timing info."""
    from gpuparity.measure.stats import summarize

    t0 = time.perf_counter()
    with telemetry_window(ctx, result) as tele:
        samples, reps, timed_out, warm = measure_synchronized(
            fn, ctx.device, comm_loop(ctx.loop, ctx.device), active=active, on_sample=tele.mark)
        result["samples"] = samples
        result["summary"] = summarize(samples)
        result["info"].update(timer="torch.cuda.Event" if ctx.device != "cpu" else "perf_counter_ns",
                              reps_per_sample=reps, warmup_invocations=warm, timed_out=timed_out,
                              measure_s=round(time.perf_counter() - t0, 3))
    if timed_out:
        result["info"]["warning"] = "stopped at the timeout before reaching the noise target"


def _library(ctx: Context, backend: str | None) -> str:
    if backend != "nccl":
        return backend or "none"
    fp = ctx.fingerprint
    name = "RCCL" if fp.get("hip_version") else "NCCL"
    return f"{name} {fp['nccl_version']}" if fp.get("nccl_version") else name


def _setup(op: str, size: int, dtype: str, n: int):
    """Buffers and one call of `op` on a per-rank buffer of `size` bytes (collective_size: whole
    elements, a multiple of n)."""
    import torch
    import torch.distributed as tdist

    dt = getattr(torch, DTYPES[dtype])
    count = size // COLLECTIVE_ELEMENT_BYTES[dtype]
    dev = dist.comm_device()

    def buf(k: int):
        return torch.empty(k, dtype=dt, device=dev)

    # torch 2.13 renamed the *_tensor collectives to *_single; older releases have only the old names.
    gather = getattr(tdist, "all_gather_single", None) or tdist.all_gather_into_tensor
    scatter = getattr(tdist, "reduce_scatter_single", None) or tdist.reduce_scatter_tensor
    if op == "all_reduce":
        x = buf(count)
        return (lambda: tdist.all_reduce(x)), [x], count
    if op == "broadcast":
        x = buf(count)
        return (lambda: tdist.broadcast(x, src=0)), [x], count
    if op == "all_gather":
        inp, out = buf(count // n), buf(count)
        return (lambda: gather(out, inp)), [inp, out], count
    if op == "reduce_scatter":
        inp, out = buf(count), buf(count // n)
        return (lambda: scatter(out, inp)), [inp, out], count
    if op == "all_to_all":
        inp, out = buf(count), buf(count)
        return (lambda: tdist.all_to_all_single(out, inp)), [inp, out], count
    raise ValueError(op)


def _check(op: str, call, buffers: list, n: int) -> tuple[bool, str]:
    """Run once on known values (small integers: exact in every dtype) and verify this rank's output."""
    import torch

    r = dist.rank()
    x = buffers[0]
    out = buffers[-1]
    chunk = x.numel() // n if op in ("reduce_scatter", "all_to_all") else out.numel() // n
    if op == "all_reduce":
        x.fill_(r + 1)
        expected = torch.full_like(x, n * (n + 1) / 2)
    elif op == "broadcast":
        x.fill_(7 if r == 0 else 0)
        expected = torch.full_like(x, 7)
    elif op == "all_gather":
        x.fill_(r + 1)
        expected = torch.arange(1, n + 1, device=x.device, dtype=x.dtype).repeat_interleave(chunk)
    elif op == "reduce_scatter":
        x.copy_(torch.arange(n, device=x.device, dtype=x.dtype).repeat_interleave(chunk) + r)
        expected = torch.full_like(out, r * n + n * (n - 1) / 2)     # sum over ranks s of (r + s)
    else:  # all_to_all: chunk j of rank r holds r*n + j; rank r then receives s*n + r from every rank s
        x.copy_(torch.arange(n, device=x.device, dtype=x.dtype).repeat_interleave(chunk) + r * n)
        expected = (torch.arange(n, device=x.device, dtype=x.dtype) * n + r).repeat_interleave(chunk)
    call()
    got = x if op in ("all_reduce", "broadcast") else out
    # Values past a 16-bit float's exact-integer range (256 bf16, 2048 fp16) round: allow that.
    rtol = 0.0 if x.dtype == torch.float32 else 2 ** -7
    ok = bool(torch.allclose(got.double(), expected.double(), rtol=rtol, atol=0.0))
    return ok, f"{op} exact on rank {r}" if ok else f"{op} differs from the expected values on rank {r}"


WORKLOADS = [Collectives()]
