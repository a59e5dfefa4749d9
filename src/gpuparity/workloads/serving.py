"""Serving benchmark: a streaming client for any OpenAI-compatible server (vLLM, SGLang, TensorRT-LLM,
llama.cpp's server, `python -m gpuparity.serving_server`).

    gpuparity run serving --set url=http://127.0.0.1:8000/v1 --set model=NAME
        [--set concurrency=1,4,16 | --set request_rate=1,4,inf] [--set input_len=128,output_len=128]
        [--set gpus=N] [--set slo_ttft_ms=500 --set slo_tpot_ms=50] [--set endpoint=chat]

Random prompts of `input_len` words (about one token each; `--set tokenizer=PATH` makes them
exact token counts), `max_tokens=output_len` with ignore_eos. A sweep point is either a closed loop
of `concurrency` clients or Poisson arrivals at `request_rate` requests/s. Per request: TTFT (first
streamed chunk), ITL (gaps between chunks), TPOT ((e2e - TTFT) / (output tokens - 1)), end to end.
One result per point; metric = output tokens/s per GPU. Server errors and timeouts are counted,
never dropped; a point where every request failed is a failed result with the first error.

Metric samples (what comparisons bootstrap over): per request, its own output rate times the mean
number of requests in flight (sum of e2e / wall time), per GPU, rescaled so that their mean is the
measured aggregate rate: their spread reflects how uneven the requests were.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from dataclasses import dataclass, field

from gpuparity.errors import UserError
from gpuparity.results.schema import mark, new_result
from gpuparity.workloads.base import Context, Workload, telemetry_window
from gpuparity.workloads.llm import int_list

WORDS = ("the of and to in is you that it he was for on are as with his they at be this have from or one "
         "had by word but not what all were we when your can said there use an each which she do how their "
         "if will up other about out many then them these so some her would make like him into time has "
         "look two more write go see number no way could people my than first water been call who oil its "
         "now find long down day did get come made may part").split()


@dataclass
class Record:
    ok: bool = False
    error: str | None = None
    timeout: bool = False
    ttft: float | None = None
    e2e: float | None = None
    itl: list[float] = field(default_factory=list)
    out_tokens: int = 0
    prompt_tokens: int | None = None

    @property
    def tpot(self) -> float | None:
        if self.ok and self.out_tokens > 1:
            return (self.e2e - self.ttft) / (self.out_tokens - 1)
        return None


def float_list(options: dict, key: str) -> list[float]:
    raw = options.get(key)
    try:
        values = [float(v) for v in str(raw).split(",") if v.strip()]
    except ValueError:
        raise UserError(f"--set {key}= takes numbers (or inf) separated by commas, got '{raw}'") from None
    if not values or any(v <= 0 for v in values):
        raise UserError(f"--set {key}= needs numbers > 0, got '{raw}'")
    return values


class Serving(Workload):
    name = "serving"
    category = "serving"
    description = "Streaming client for OpenAI-compatible servers: TTFT/TPOT/ITL, throughput per GPU, goodput"
    axes = {"url": "http://HOST:PORT/v1 (required)", "model": "served model name", "concurrency": "1,4,16",
            "request_rate": "req/s (Poisson), inf", "input_len,output_len": "tokens", "num_prompts": "per point",
            "gpus": "for per-GPU figures", "slo_ttft_ms,slo_tpot_ms": "goodput SLOs", "endpoint": "completions | chat"}
    suites = ()  # needs a server the user started: runs only when named with --set url=

    def __init__(self):
        self._rows: dict[str, list[list[str]]] = {}
        self._last: dict[str, dict] = {}

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        o = ctx.options
        if not o.get("url"):
            raise UserError("serving needs a running server: --set url=http://HOST:PORT/v1 [--set model=NAME]")
        endpoint = o.get("endpoint", "completions")
        if endpoint not in ("completions", "chat"):
            raise UserError("--set endpoint= takes completions or chat")
        model = o.get("model") or discover_model(o["url"])
        base = dict(model=model, endpoint=endpoint, input_len=int_list(o, "input_len", [128])[0],
                    output_len=int_list(o, "output_len", [128])[0], gpus=int_list(o, "gpus", [1])[0])
        if o.get("request_rate"):
            cap = int_list(o, "concurrency", [0])[0] if o.get("concurrency") else 0
            # "inf" stays a string in params: run documents are strict JSON (no Infinity)
            points = [dict(request_rate=r if math.isfinite(r) else "inf", max_concurrency=cap)
                      for r in float_list(o, "request_rate")]
            sizes = [cap or 16] * len(points)
        else:
            conc = int_list(o, "concurrency", [1, 4, 16])
            points = [dict(concurrency=c) for c in conc]
            sizes = conc
        n_fixed = int_list(o, "num_prompts", [1])[0] if o.get("num_prompts") else None
        cases = [dict(base, **p, num_prompts=n_fixed or max(8 * s, 32)) for p, s in zip(points, sizes, strict=True)]
        self._rows, self._last = {}, {}
        for c in cases:
            self._last[curve_key(c)] = c
        return cases

    def execute(self, params: dict, ctx: Context) -> dict:
        import numpy as np

        from gpuparity.measure.stats import bootstrap_ci, summarize

        o = ctx.options
        result = new_result(self.name, self.category, params, None)
        cfg = PointConfig.from_params(params, o)
        result["info"].update(url=cfg.url, curve_key=curve_key(params), prompt_words=params["input_len"],
                              tokenizer=o.get("tokenizer"))
        with telemetry_window(ctx) as tele:  # power of this machine's GPUs, when the server runs here
            records, wall = asyncio.run(run_point(cfg))
        result["telemetry"] = tele.get("result")
        stats = point_stats(records, wall, params, o)
        result["info"]["serving"] = stats
        row = table_row(params, stats)
        self._rows.setdefault(curve_key(params), []).append(row)
        if self._last.get(curve_key(params)) == params:
            result["info"]["table"] = {"title": curve_key(params), "columns": list(TABLE_COLUMNS),
                                       "rows": self._rows[curve_key(params)]}
        good = [r for r in records if r.ok]
        if not good:
            first = next((r.error for r in records if r.error), "every request timed out")
            return mark(result, "failed", f"all {len(records)} requests failed "
                        f"({stats['errors']} errors, {stats['timeouts']} timeouts); first: {first}")
        e2e = [r.e2e for r in good]
        in_flight = sum(e2e) / wall
        rates = [r.out_tokens / r.e2e * in_flight / params["gpus"] for r in good]
        value = stats["throughput_per_gpu"]
        samples = [v * value / float(np.mean(rates)) for v in rates]  # scaled so their mean is the value
        lo, hi = bootstrap_ci(samples, stat=np.mean)
        result["samples"] = e2e
        result["summary"] = summarize(e2e)
        result["work"] = {"tokens": sum(r.out_tokens for r in good)}
        result["metric"] = {"name": "tokens", "unit": "tokens/s/GPU", "value": value, "higher_is_better": True,
                            "ci_low": lo, "ci_high": hi, "samples": samples}
        result["derived"].update(tokens_per_s=value * params["gpus"], interactivity=stats["interactivity"],
                                 ttft_s=stats["ttft_p50_s"], tpot_s=stats["tpot_p50_s"])
        if stats["errors"] or stats["timeouts"]:
            result["info"]["warning"] = f"{stats['errors']} errors, {stats['timeouts']} timeouts (not in throughput)"
        return result


def curve_key(params: dict) -> str:
    return f"{params['model']} in={params['input_len']} out={params['output_len']} {params['endpoint']}"


@dataclass
class PointConfig:
    url: str
    body: dict
    num_prompts: int
    concurrency: int          # closed loop clients; 0 in rate mode
    rate: float               # requests/s for Poisson arrivals; 0 in closed-loop mode
    max_concurrency: int      # cap in rate mode (0: none)
    timeout_s: float
    prompts: list = field(default_factory=list)

    @classmethod
    def from_params(cls, params: dict, options: dict) -> "PointConfig":
        chat = params["endpoint"] == "chat"
        url = options["url"].rstrip("/") + ("/chat/completions" if chat else "/completions")
        body = {"model": params["model"], "max_tokens": params["output_len"], "stream": True,
                "ignore_eos": True, "temperature": 0.0, "stream_options": {"include_usage": True}}
        try:
            timeout = float(options.get("timeout_s", 300))
        except ValueError:
            raise UserError("--set timeout_s= takes seconds") from None
        rng = random.Random(int(options.get("seed", 0)) + params["input_len"])
        prompts = make_prompts(rng, params["num_prompts"], params["input_len"], options.get("tokenizer"))
        if chat:
            prompts = [[{"role": "user", "content": p}] for p in prompts]
        return cls(url=url, body=body, num_prompts=params["num_prompts"],
                   concurrency=params.get("concurrency", 0), rate=float(params.get("request_rate", 0.0)),
                   max_concurrency=params.get("max_concurrency", 0), timeout_s=timeout, prompts=prompts)


def make_prompts(rng: random.Random, n: int, length: int, tokenizer: str | None) -> list:
    """Random prompts: exact token counts with a tokenizer, else `length` common words (~1 token each)."""
    if tokenizer:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(tokenizer)
        vocab = tok.vocab_size
        special = set(tok.all_special_ids)
        return [tok.decode([t for t in (rng.randrange(vocab) for _ in range(length * 2)) if t not in special][:length])
                for _ in range(n)]
    return [" ".join(rng.choice(WORDS) for _ in range(length)) for _ in range(n)]


def discover_model(url: str) -> str:
    """The first model a server lists at /v1/models (so --set model= can be left out)."""
    import httpx

    try:
        data = httpx.get(url.rstrip("/") + "/models", timeout=10).json()
        return data["data"][0]["id"]
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
        raise UserError(f"could not list models at {url}/models: pass --set model=NAME") from None


async def run_point(cfg: PointConfig) -> tuple[list[Record], float]:
    import httpx

    limit = cfg.concurrency or cfg.max_concurrency or cfg.num_prompts
    limits = httpx.Limits(max_connections=limit, max_keepalive_connections=limit)
    timeout = httpx.Timeout(cfg.timeout_s, connect=min(cfg.timeout_s, 10.0))
    records: list[Record] = []
    t0 = time.perf_counter()
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        if cfg.concurrency:
            queue = list(range(cfg.num_prompts))

            async def worker():
                while queue:
                    records.append(await one_request(client, cfg, cfg.prompts[queue.pop(0)]))

            await asyncio.gather(*(worker() for _ in range(min(cfg.concurrency, cfg.num_prompts))))
        else:
            rng = random.Random(1)
            sem = asyncio.Semaphore(cfg.max_concurrency or cfg.num_prompts)

            async def limited(prompt):
                async with sem:
                    records.append(await one_request(client, cfg, prompt))

            tasks = []
            for prompt in cfg.prompts:
                tasks.append(asyncio.create_task(limited(prompt)))
                if not math.isinf(cfg.rate):
                    await asyncio.sleep(rng.expovariate(cfg.rate))
            await asyncio.gather(*tasks)
    return records, time.perf_counter() - t0


async def one_request(client, cfg: PointConfig, prompt) -> Record:
    import httpx

    body = dict(cfg.body, **({"messages": prompt} if isinstance(prompt, list) else {"prompt": prompt}))
    rec = Record()
    chunks, done, last = 0, False, None
    t0 = time.perf_counter()
    try:
        async with client.stream("POST", cfg.url, json=body) as resp:
            if resp.status_code != 200:
                text = (await resp.aread()).decode(errors="replace")[:200]
                rec.error = f"HTTP {resp.status_code}: {text}"
                return rec
            async for line in resp.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    done = True
                    break
                obj = json.loads(data)
                if obj.get("error"):
                    rec.error = f"server error: {str(obj['error'])[:200]}"
                    return rec
                if obj.get("usage"):
                    rec.out_tokens = obj["usage"].get("completion_tokens") or 0
                    rec.prompt_tokens = obj["usage"].get("prompt_tokens")
                for choice in obj.get("choices") or []:
                    piece = choice.get("text")
                    if piece is None:
                        piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        now = time.perf_counter()
                        if last is None:
                            rec.ttft = now - t0
                        else:
                            rec.itl.append(now - last)
                        last = now
                        chunks += 1
                    if choice.get("finish_reason"):
                        done = True
    except httpx.TimeoutException:
        rec.timeout = True
        rec.error = f"timed out after {cfg.timeout_s:g} s"
        return rec
    except (httpx.HTTPError, OSError, ValueError) as exc:
        rec.error = f"{type(exc).__name__}: {str(exc)[:200]}"
        return rec
    rec.e2e = time.perf_counter() - t0
    rec.out_tokens = rec.out_tokens or chunks
    if not done:
        rec.error = "stream ended before the last chunk"
    elif rec.ttft is None:
        rec.error = "no tokens streamed"
    else:
        rec.ok = True
    return rec


def _pcts(values: list[float], name: str) -> dict:
    import numpy as np

    if not values:
        return {f"{name}_{p}_s": None for p in ("mean", "p50", "p90", "p99")}
    x = np.asarray(values, dtype=float)
    out = {f"{name}_mean_s": float(x.mean())}
    out.update({f"{name}_p{q}_s": float(np.percentile(x, q)) for q in (50, 90, 99)})
    return out


def point_stats(records: list[Record], wall: float, params: dict, options: dict) -> dict:
    import numpy as np

    good = [r for r in records if r.ok]
    gpus = params["gpus"]
    out_tokens = sum(r.out_tokens for r in good)
    prompt_known = all(r.prompt_tokens is not None for r in good)
    prompt_tokens = sum((r.prompt_tokens if prompt_known else params["input_len"]) for r in good)
    tpots = [r.tpot for r in good if r.tpot]
    stats = {
        "requests": len(records), "completed": len(good),
        "errors": sum(1 for r in records if r.error and not r.timeout),
        "timeouts": sum(1 for r in records if r.timeout),
        "duration_s": wall,
        "throughput_per_gpu": out_tokens / wall / gpus,
        "total_throughput_per_gpu": (out_tokens + prompt_tokens) / wall / gpus,
        "prompt_tokens_estimated": not prompt_known,
        "request_throughput": len(good) / wall,
        "interactivity": float(np.median([1.0 / t for t in tpots])) if tpots else None,
        "mean_output_tokens": out_tokens / len(good) if good else 0,
        "mean_prompt_tokens": prompt_tokens / len(good) if good else 0,
    }
    for name, values in (("ttft", [r.ttft for r in good]), ("tpot", tpots),
                         ("itl", [g for r in good for g in r.itl]), ("e2e", [r.e2e for r in good])):
        stats.update(_pcts(values, name))
    slo_ttft, slo_tpot = options.get("slo_ttft_ms"), options.get("slo_tpot_ms")
    stats["goodput"] = None  # without SLOs (--set slo_ttft_ms= / slo_tpot_ms=) there is no goodput
    if slo_ttft or slo_tpot:
        try:
            t_lim = float(slo_ttft) / 1e3 if slo_ttft else math.inf
            p_lim = float(slo_tpot) / 1e3 if slo_tpot else math.inf
        except ValueError:
            raise UserError("--set slo_ttft_ms= / slo_tpot_ms= take milliseconds") from None
        met = [r for r in good if r.ttft <= t_lim and (r.tpot or 0.0) <= p_lim]
        stats["goodput"] = {"slo_ttft_ms": slo_ttft and float(slo_ttft), "slo_tpot_ms": slo_tpot and float(slo_tpot),
                            "requests_per_s": len(met) / wall, "fraction": len(met) / len(records) if records else 0.0,
                            "tokens_per_s_per_gpu": sum(r.out_tokens for r in met) / wall / gpus}
    return stats


TABLE_COLUMNS = ("load", "requests", "errors", "timeouts", "out tok/s/GPU", "total tok/s/GPU", "tok/s/user",
                 "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "ITL p50 ms", "E2E p50 s", "goodput")


def table_row(params: dict, s: dict) -> list[str]:
    def ms(v):
        return "" if v is None else f"{v * 1e3:.1f}"

    load = f"c={params['concurrency']}" if "concurrency" in params else f"rate={float(params['request_rate']):g}/s"
    good = s.get("goodput")
    return [load, str(s["requests"]), str(s["errors"]), str(s["timeouts"]), f"{s['throughput_per_gpu']:.1f}",
            f"{s['total_throughput_per_gpu']:.1f}", "" if s["interactivity"] is None else f"{s['interactivity']:.1f}",
            ms(s["ttft_p50_s"]), ms(s["ttft_p99_s"]), ms(s["tpot_p50_s"]), ms(s["itl_p50_s"]),
            "" if s["e2e_p50_s"] is None else f"{s['e2e_p50_s']:.2f}",
            "" if not good else f"{100 * good['fraction']:.0f}%"]


WORKLOADS = [Serving()]
