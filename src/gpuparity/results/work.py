"""The work one invocation of a built-in workload does, from its params: one function each,
called by the workload when it measures and by results/recompute.py when a document comes in,
so that stated work can never be more than the case its params name.

    gemm         2*M*N*K FLOP (gemm_search: of the shape its search found, info.best_shape)
    memory       bytes read + written: arrays touched per element x elements x 4 (fp32);
                 h2d / d2h: the bytes copied
    attention    4*B*H*S*S*D FLOP, halved when causal, x2.5 backward
    conv         2*N*Cout*Hout*Wout*Cin*kh*kw FLOP, x2 backward
    moe          router 2*T*H*E + experts 6*T*H*F*(k + shared) FLOP; T tokens
    llm          batch * (output_len - 1) decode tokens
    training     batch*seq tokens; FLOP = tokens x (6*N_matmul + 12*L*d_attn*T), N from the shape
    scaling      as training, over `ranks` ranks
    collectives  the per-rank buffer (nccl-tests' size, whole elements, a multiple of the ranks)
                 x the bus factor: bus bytes
    serving      none (its figure is its request rows')
A user's own workload (--workload-file, an entry point) has no function here: its work is its
own word, and its merged results carry the flag WORK_UNCHECKED saying so. `work_of` returns None
also where the params lack what the work follows from (not a case any built-in workload makes).
"""

from __future__ import annotations

from typing import Any, Callable

# memory: fp32 arrays touched per element (read + written); host transfers copy one array
MEMORY_KERNELS = {"copy": 2, "scale": 2, "add": 3, "triad": 3, "read": 1}
MEMORY_TRANSFERS = ("h2d", "d2h")
COLLECTIVE_ELEMENT_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
WORK_UNCHECKED = "work_unchecked"      # flag: a user's workload, whose work no function here gives
COLLECTIVE_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")


class _Missing(Exception):
    """The params lack (or mistype) a field the work follows from."""


def _int(p: dict, name: str, least: int = 1) -> int:
    v = p.get(name)
    if not isinstance(v, int) or isinstance(v, bool) or v < least:
        raise _Missing(name)
    return v


def _choice(p: dict, name: str, allowed) -> Any:
    v = p.get(name)
    if isinstance(v, bool) or v not in allowed:
        raise _Missing(name)
    return v


# -- one function each -------------------------------------------------------------------------
def gemm_flop(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def memory_bytes(op: str, elements: int) -> float:
    return float((MEMORY_KERNELS[op] if op in MEMORY_KERNELS else 1) * elements * 4)


def attention_flop(p: dict) -> float:
    fwd = 4.0 * p["batch"] * p["heads"] * p["seq"] * p["seq"] * p["head_dim"]
    if p["causal"]:
        fwd /= 2
    return fwd * (2.5 if p["pass"] == "bwd" else 1.0)


def conv_out(hw: int, kernel: int, stride: int) -> int:
    return (hw + 2 * (kernel // 2) - kernel) // stride + 1


def conv_flop(p: dict) -> float:
    ho = conv_out(p["hw"], p["kernel"], p["stride"])
    fwd = 2.0 * p["batch"] * p["cout"] * ho * ho * p["cin"] * p["kernel"] ** 2
    return fwd * (2.0 if p["pass"] == "bwd" else 1.0)


def moe_flop(p: dict) -> float:
    t, h, f = p["tokens"], p["hidden"], p["ffn"]
    return 2.0 * t * h * p["experts"] + 6.0 * t * h * f * (p["top_k"] + p["shared"])


def llm_tokens(batch: int, output_len: int) -> int:
    """Decode tokens of one repetition: the first token comes from prefill."""
    return batch * (output_len - 1)


def train_ffn(hidden: int, ffn: int = 0) -> int:
    """The decoder's FFN width: as given, else about 8/3 x hidden rounded up to 64 (Llama's SwiGLU rule)."""
    return ffn or -(-8 * hidden // 3 // 64) * 64


def train_matmul_params(p: dict) -> int:
    """N_matmul of the Llama-style decoder (workloads/training.py): the weights of every linear
    layer: per layer q and o (hidden x heads*head_dim), k and v (hidden x kv_heads*head_dim),
    gate, up and down (hidden x ffn); the lm_head (hidden x vocab). The input embedding is a lookup."""
    hidden, heads = p["hidden"], p["heads"]
    kv, head_dim = p.get("kv_heads") or heads, hidden // heads
    ffn = train_ffn(hidden, p.get("ffn") or 0)
    per_layer = 2 * hidden * heads * head_dim + 2 * hidden * kv * head_dim + 3 * hidden * ffn
    return p["layers"] * per_layer + hidden * p["vocab"]


def train_flops_per_token(p: dict) -> float:
    """6 * N_matmul + 12 * L * d_attn * T (PaLM's appendix B; workloads/training.py says why)."""
    d_attn = p["heads"] * (p["hidden"] // p["heads"])
    return 6.0 * train_matmul_params(p) + 12.0 * p["layers"] * d_attn * p["seq"]


def collective_size(op: str, size: int, dtype: str, ranks: int) -> int:
    """The per-rank buffer in bytes a collective of `size` bytes moves: whole elements, a multiple
    of the ranks (as nccl-tests rounds), at least one element per rank."""
    esize = COLLECTIVE_ELEMENT_BYTES[dtype]
    return max(ranks, size // esize // ranks * ranks) * esize


def bus_factor(op: str, n: int) -> float:
    """busbw / algbw of a collective over n ranks (nccl-tests PERFORMANCE.md)."""
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    if op == "broadcast":
        return 1.0
    raise ValueError(f"unknown collective {op}")


# -- params (and, for a shape search, the shape found) -> work -----------------------------------
def _gemm(p: dict, info: dict) -> dict:
    return {"flop": gemm_flop(_int(p, "m"), _int(p, "n"), _int(p, "k"))}


def _gemm_search(p: dict, info: dict) -> dict:
    shape = info.get("best_shape")
    if not isinstance(shape, dict):
        raise _Missing("info.best_shape")
    return _gemm(shape, {})


def _memory(p: dict, info: dict) -> dict:
    op = _choice(p, "op", (*MEMORY_KERNELS, *MEMORY_TRANSFERS))
    return {"bytes": memory_bytes(op, _int(p, "elements"))}


def _attention(p: dict, info: dict) -> dict:
    for f in ("batch", "heads", "seq", "head_dim"):
        _int(p, f)
    if not isinstance(p.get("causal"), bool):
        raise _Missing("causal")
    _choice(p, "pass", ("fwd", "bwd"))
    return {"flop": attention_flop(p)}


def _conv(p: dict, info: dict) -> dict:
    for f in ("batch", "cin", "cout", "hw", "kernel", "stride"):
        _int(p, f)
    _choice(p, "pass", ("fwd", "bwd"))
    return {"flop": conv_flop(p)}


def _moe(p: dict, info: dict) -> dict:
    for f in ("tokens", "hidden", "ffn", "experts", "top_k"):
        _int(p, f)
    _int(p, "shared", 0)
    return {"flop": moe_flop(p), "tokens": float(p["tokens"])}


def _llm(p: dict, info: dict) -> dict:
    return {"tokens": llm_tokens(_int(p, "batch"), _int(p, "output_len", 2))}


def _train_shape(p: dict) -> None:
    for f in ("hidden", "layers", "heads", "vocab", "seq", "batch"):
        _int(p, f)
    for f in ("kv_heads", "ffn"):
        if p.get(f) is not None:
            _int(p, f, 0)


def _training(p: dict, info: dict) -> dict:
    _train_shape(p)
    tokens = p["batch"] * p["seq"]
    return {"tokens": tokens, "flop": train_flops_per_token(p) * tokens}


def _scaling(p: dict, info: dict) -> dict:
    _train_shape(p)
    tokens = float(p["batch"] * p["seq"] * _int(p, "ranks"))
    return {"tokens": tokens, "flop": train_flops_per_token(p) * tokens}


def _collectives(p: dict, info: dict) -> dict:
    op, n = _choice(p, "op", COLLECTIVE_OPS), _int(p, "ranks")
    size = collective_size(op, _int(p, "bytes"), _choice(p, "dtype", tuple(COLLECTIVE_ELEMENT_BYTES)), n)
    return {"bytes": float(size) * bus_factor(op, n)}


def _serving(p: dict, info: dict) -> dict:
    return {}


WORK: dict[str, Callable[[dict, dict], dict]] = {
    "gemm": _gemm, "gemm_search": _gemm_search, "memory": _memory, "attention": _attention, "conv": _conv,
    "moe": _moe, "llm": _llm, "training": _training, "scaling": _scaling, "collectives": _collectives,
    "serving": _serving,
}


def _facts_collectives(p: dict) -> dict:
    return {"size_bytes": collective_size(p["op"], p["bytes"], p["dtype"], p["ranks"]), "world_size": p["ranks"]}


def _facts_training(p: dict) -> dict:
    return {"flops_per_token": train_flops_per_token(p)}


# info fields that follow from the params too (the views and the workload's own figures read them)
FACTS: dict[str, Callable[[dict], dict]] = {"collectives": _facts_collectives, "training": _facts_training,
                                            "scaling": _facts_training}


def checkable(workload: Any) -> bool:
    """True for a built-in workload (its work follows from its params here)."""
    return isinstance(workload, str) and workload in WORK


def _work(workload: str, params: Any, info: Any) -> tuple[dict | None, str | None]:
    """(work, None), or (None, the field it lacks)."""
    try:
        return WORK[workload](params if isinstance(params, dict) else {}, info if isinstance(info, dict) else {}), None
    except _Missing as exc:
        return None, str(exc)


def work_of(workload: str, params: dict, info: dict | None = None) -> dict | None:
    """The work one invocation of a built-in workload's case does (info: the result's or trial's,
    for a shape search's shape); None for a user's workload or params that do not give it."""
    return _work(workload, params, info)[0] if checkable(workload) else None


def same_work(stated: Any, want: dict, rel: float = 1e-9) -> bool:
    """The same kinds of work (zeros count as none) in the same amounts, beyond rounding."""
    import math

    if not isinstance(stated, dict):
        return False
    a = {k: v for k, v in stated.items() if v}
    b = {k: v for k, v in want.items() if v}
    return a.keys() == b.keys() and all(
        isinstance(a[k], (int, float)) and not isinstance(a[k], bool) and math.isclose(a[k], b[k], rel_tol=rel)
        for k in a)


def _show(work: Any) -> str:
    if not isinstance(work, dict):
        return str(work)[:60]
    return "{" + ", ".join(f"{k}: {v:.6g}" if isinstance(v, (int, float)) else f"{k}: {str(v)[:20]}"
                           for k, v in work.items()) + "}"


def work_problem(r: dict) -> str | None:
    """The first way a built-in result's stated work is not what its params give, or None: the
    result's work (stated, not empty), each trial's (the result's; a shape search's trial: its
    own shape's, its first counted trial the result's), and the info fields that follow from the
    params (FACTS). None for a user's workload (nothing here knows its work) and for params that
    lack a field the work needs: no case of that workload has them, so its key pairs with no
    result `run` makes (a document from another tool, or made up by hand)."""
    workload = r.get("workload")
    if not checkable(workload):
        return None
    info = r.get("info") if isinstance(r.get("info"), dict) else {}
    work = r.get("work") or {}
    trials = [t for t in r.get("trials") or [] if isinstance(t, dict) and t.get("work")]
    want, missing = _work(workload, r.get("params"), info)
    if want is None:        # params that are no case of this workload's (its key matches none of theirs):
        if missing.startswith("info.") and (work or trials):       # but a case whose evidence is gone
            return f"it lacks {missing}, which the work it states follows from"
        return None         # nothing to check against
    if work and not same_work(work, want):
        return f"work states {_show(work)}, but its params give {_show(want)} ({workload}: results/work.py)"
    counted = [t for t in trials if t.get("status", "ok") == "ok" and t.get("value") is not None]
    for t in trials:
        wants = [(want, "its params give")]
        if workload == "gemm_search":       # each trial searched: its own shape; the result is its first's
            own = _work(workload, {}, {"best_shape": t["best_shape"]})[0] if "best_shape" in t else want
            if own is None:
                return f"trial {t.get('trial')}: best_shape {str(t['best_shape'])[:60]} is no GEMM shape"
            wants = [(own, "its best_shape gives" if "best_shape" in t else "the result's best_shape gives")]
            if counted and t is counted[0]:
                wants.append((want, "the result (its first counted trial's) has"))
        for w, whose in wants:
            if not same_work(t["work"], w):
                return f"trial {t.get('trial')}: work states {_show(t['work'])}, but {whose} {_show(w)}"
    facts = FACTS[workload](r["params"]) if workload in FACTS else {}
    for field, value in facts.items():
        if field in info and not same_work({"x": info[field]}, {"x": value}):
            return f"info.{field} states {str(info[field])[:40]}, but its params give {value:.6g}"
    return None
