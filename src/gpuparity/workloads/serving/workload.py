"""Serving benchmark: a streaming client for any OpenAI-compatible server (vLLM, SGLang,
TensorRT-LLM, llama.cpp's server, `transformers serve`, `python -m gpuparity.demo.serving_server`),
measuring what `vllm bench serve` measures, one result per sweep point.

    gpuparity run serving --set url=http://127.0.0.1:8000/v1 [--set model=NAME]
        --set concurrency=1,4,16 | --set request_rate=2,8,inf [--set max_concurrency=64 --set burstiness=1]
        [--set input_len=1024,8192 --set output_len=1024] [--set dataset=random|sharegpt|prefix]
        [--set ignore_eos=true] [--set percentiles=50,90,99] [--set slo_ttft_ms=500 --set slo_tpot_ms=50]
        [--set gpus=8] [--set warmup=2] [--set endpoint=chat]

Sweeps: every value of input_len x output_len x (concurrency or request_rate) is a point. A
point is a closed loop of `concurrency` clients, or arrivals at `request_rate` req/s (gamma
gaps of shape `burstiness`, 1 = Poisson; inf = all at once) capped at `max_concurrency` in
flight, or a ramp (`ramp_up=linear|exponential`, `ramp_start_rps`, `ramp_end_rps`). `warmup`
requests run before timing and are not counted. `num_prompts` defaults to 10 x concurrency.
Prompts (workloads/serving/datasets.py) come from the served model's tokenizer where one is on
this machine (`--set tokenizer=` names one); they change from trial to trial (prefix caches
cannot carry over). `ignore_eos` is off by default (vLLM's client turns it on for its random
dataset, guidellm whenever the output length is fixed: set it to match them); a server that
refuses it is named in the errors. `warmup` is 2 requests (guidellm: none; vLLM: none unless
--num-warmups). Rounds: `gpuparity run --trials N` measures each point N times, interleaved with
the other points, each round with fresh prompts and a fresh connection pool; the point's interval
comes from the rounds' spread (the requests' interval as a floor) and "unstable" from the rounds. Deadlines: `timeout_s` per request (overall), `point_timeout_s` per
point; caps: `max_response_mb` per response, max_tokens + 16 pieces per stream. Every request
is accounted for; a point where every request failed is a failed result.

Result key (params): dataset (+ file digest or prefix shape), input_len, output_len, endpoint,
ignore_eos, the load (concurrency | request_rate [+ max_concurrency, burstiness] | ramp),
num_prompts, seed. Not the server's model alias: two servers naming one model differently
compare. The alias, /v1/models and identity headers (server, x-powered-by, ...) go into info.

Data contract (what `show`, the report and `compare` read; names are stable):
- metric: value = output tokens / the point's duration / gpus ("tokens", unit tokens/s/GPU where
  gpus= is given, else tokens/s: per server), log_se = the within-round standard error of its
  log (serving_summary: delta method over requests); rounds combine as every result's trials
  (results/figure.py), the interval never narrower than the requests' (serving_summary.point_figure).
- flags: unverified_tokens (no tokenizer held the counts to its bounds), invalid_requests (the
  stream contradicted some requests' usage: their time and tokens are out of the rates), unstable
  (the rounds' spread above the threshold).
- samples: the completed requests' E2E latencies in seconds; summary: their summary, with
  rel_noise = the throughput's relative 95% half-width (what stability flags read).
- derived: tokens_per_s (all GPUs), interactivity, ttft_ms / tpot_ms / itl_ms / e2el_ms (medians).
- info.curve_key: the points of one curve (same workload, all but the load) share it.
- info.serving: the point's summary (serving_summary.summarize_point): completed, failed,
  errors, timeouts, invalid, duration_s, rate_duration_s, request_throughput, input/output/total_throughput and
  *_per_gpu, throughput_per_gpu (== metric value), interactivity (tok/s/user),
  ttft_ms / tpot_ms / itl_ms / e2el_ms ({mean, median, std, p<q>...}), goodput ({slos, ...} or
  None), usage (server usage vs client counts), error_kinds, log_se, interactivity_log_se,
  warmup, and trials (each trial's summary; across trials the latencies are pooled over
  requests and each rate is the geometric mean of the trials').
- info.requests: per-request rows (serving_summary.request_rows), from which every figure above
  can be redone; `gpuparity export RUN --requests -o reqs.csv` writes them.
- info.table: the summary in `vllm bench serve` order, printed by `show`.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, field, replace
from itertools import product

from gpuparity.errors import UserError
from gpuparity.results.schema import canonical, new_result
from gpuparity.results.serving_summary import curve_key, fill_derived, table_of
from gpuparity.workloads.base import Context, Workload, merge_trials, telemetry_window
from gpuparity.workloads.llm import int_list
from gpuparity.workloads.serving.accuracy import DEFAULT_PROBLEMS, MAX_PROBLEMS
from gpuparity.workloads.serving.point import Progress, finish, token_counts

AXES = {
    "url": "http://HOST:PORT/v1 (required)",
    "model": "name to send (default: the first of /v1/models)",
    "endpoint": "completions | chat",
    "dataset": "random | sharegpt | prefix",
    "dataset_path": "ShareGPT-format JSON file",
    "input_len": "prompt tokens, e.g. 1024,8192 (random, prefix)",
    "output_len": "max_tokens, e.g. 1024 (sharegpt: from the replies unless set)",
    "range_ratio": "lengths uniform in len*[1-r, 1+r] (default 0)",
    "prefix_len": "shared prefix tokens (dataset=prefix)",
    "num_prefixes": "distinct prefixes (dataset=prefix, default 4)",
    "concurrency": "closed-loop clients, e.g. 1,4,16",
    "request_rate": "req/s, e.g. 2,8,inf",
    "max_concurrency": "cap on requests in flight with request_rate",
    "burstiness": "gamma shape of arrival gaps (1 = Poisson)",
    "ramp_up": "linear | exponential request-rate ramp",
    "ramp_start_rps": "ramp start rate",
    "ramp_end_rps": "ramp end rate",
    "num_prompts": "requests per point (default 10 x concurrency)",
    "warmup": "uncounted requests before timing (default 2)",
    "ignore_eos": "true | false (default false)",
    "tokenizer": "PATH | NAME | none (default: the served model's, where on this machine)",
    "percentiles": "e.g. 50,90,99",
    "slo_ttft_ms": "goodput SLO",
    "slo_tpot_ms": "goodput SLO",
    "slo_e2el_ms": "goodput SLO",
    "gpus": "GPUs behind the server, for per-GPU figures (default: per server)",
    "seed": "prompt seed (default 0)",
    "temperature": "sampling temperature (default 0: greedy)",
    "timeout_s": "overall deadline per request",
    "point_timeout_s": "overall deadline per point",
    "max_response_mb": "cap on one response's bytes",
    "engine": "the server's engine and version as you know it, e.g. 'vllm 0.11.0' (recorded; the server's word wins)",
    "server_flags": "the server's launch flags, e.g. '--dtype bfloat16 -tp 8' (read for precision and parallelism)",
    "accuracy": "problems of the accuracy eval asked once per server (default 16; 0: none)",
}
DATASETS = ("random", "sharegpt", "prefix")
ENDPOINTS = ("completions", "chat")
RAMPS = ("linear", "exponential")
DEFAULT_LEN = 128
DEFAULT_WARMUP = 2


LISTED = ("concurrency", "request_rate", "input_len", "output_len")     # the axes a sweep lists
KIND_WORDS = {int: "a whole number", float: "a number", str: "a text"}


def _one(o: dict, key: str, kind, default, lo=None, hi=None):
    raw = o.get(key)
    if raw in (None, ""):
        return default
    if "," in str(raw):
        raise UserError(f"--set {key}= takes one value, got '{raw}' (a sweep lists {', '.join(LISTED)})")
    try:
        value = kind(str(raw))
    except ValueError:
        raise UserError(f"--set {key}= takes {KIND_WORDS.get(kind, kind.__name__)}, got '{raw}'") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError(f"--set {key}= takes a finite number, got '{raw}'")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise UserError(f"--set {key}={raw} is out of range ({lo if lo is not None else '-inf'}.."
                        f"{hi if hi is not None else 'inf'})")
    return value


def _bool(o: dict, key: str, default: bool) -> bool:
    raw = str(o.get(key, "")).strip().lower()
    if raw == "":
        return default
    if "," in raw:
        raise UserError(f"--set {key}= takes one value, got '{o[key]}' (a sweep lists {', '.join(LISTED)})")
    if raw not in ("true", "false", "1", "0", "yes", "no"):
        raise UserError(f"--set {key}= takes true or false, got '{o[key]}'")
    return raw in ("true", "1", "yes")


def _text(o: dict, key: str) -> str | None:
    """A free-text --set value (engine, server_flags), made storable (one line, bounded)."""
    from gpuparity.validate import clean_text

    raw = o.get(key)
    if raw in (None, ""):
        return None
    try:
        return clean_text(str(raw), f"--set {key}", 1000)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def float_list(o: dict, key: str) -> list[float]:
    raw = o.get(key)
    try:
        values = [float(v) for v in str(raw).split(",") if v.strip()]
    except ValueError:
        raise UserError(f"--set {key}= takes numbers (or inf) separated by commas, got '{raw}'") from None
    if not values or any(not v > 0 for v in values):
        raise UserError(f"--set {key}= needs numbers > 0, got '{raw}'")
    return values


@dataclass
class Settings:
    """The --set values that shape how a point is run but not what it is (not in the key)."""

    url: str
    model: str | None
    tokenizer: str | None
    gpus: int | None                # the server's GPUs (None: not given, figures per server)
    warmup: int
    percentiles: tuple
    slos: dict
    temperature: float
    timeout_s: float | None
    point_timeout_s: float | None
    max_bytes: int | None
    seed: int
    dataset_path: str | None
    declared: dict = field(default_factory=dict)     # what the user says the server is: engine, server_flags, gpus
    accuracy: int = 0                                # eval problems per server (0: none)
    launch: dict | None = None                       # the record of a server gpuparity launched (serving/launch.py)

    @classmethod
    def from_options(cls, o: dict) -> "Settings":
        url = str(o.get("url") or "").strip().rstrip("/")
        if not url:
            raise UserError("serving needs a running server: --set url=http://HOST:PORT/v1 [--set model=NAME]")
        if not url.startswith(("http://", "https://")):
            raise UserError(f"--set url={url}: give an http:// or https:// base URL, e.g. http://127.0.0.1:8000/v1")
        pct = tuple(sorted(set(float_list(o, "percentiles")))) if o.get("percentiles") else (50.0, 90.0, 99.0)
        if any(q > 100 for q in pct):
            raise UserError("--set percentiles= takes values in (0, 100]")
        slos = {name: _one(o, f"slo_{name}_ms", float, None, lo=0.0) for name in ("ttft", "tpot", "e2el")}
        mb = _one(o, "max_response_mb", float, None, lo=0.001)
        return cls(url=url, model=o.get("model") or None, tokenizer=o.get("tokenizer") or None,
                   gpus=_one(o, "gpus", int, None, lo=1), warmup=_one(o, "warmup", int, DEFAULT_WARMUP, lo=0, hi=10_000),
                   percentiles=pct, slos={k: v for k, v in slos.items() if v is not None},
                   temperature=_one(o, "temperature", float, 0.0, lo=0.0, hi=100.0),
                   timeout_s=_one(o, "timeout_s", float, None, lo=0.01),
                   point_timeout_s=_one(o, "point_timeout_s", float, None, lo=0.01),
                   max_bytes=int(mb * 2**20) if mb else None, seed=_one(o, "seed", int, 0),
                   dataset_path=o.get("dataset_path") or None,
                   declared={"engine": _text(o, "engine"), "server_flags": _text(o, "server_flags"),
                             "gpus": _one(o, "gpus", int, None, lo=1)},
                   accuracy=_one(o, "accuracy", int, DEFAULT_PROBLEMS, lo=0, hi=MAX_PROBLEMS),
                   launch=o.get("serve_launch") if isinstance(o.get("serve_launch"), dict) else None)


@dataclass
class Server:
    model: str                      # the name sent in requests
    models: list = field(default_factory=list)
    identity: dict = field(default_factory=dict)    # identity headers (server, x-powered-by, ...)
    tokenizer: object = None        # datasets.Tokenizer or None
    note: str | None = None
    info: dict = field(default_factory=dict)        # info.server_identity (serving/server_info.py)
    accuracy: dict | None = None    # info.accuracy, asked once per server (serving/accuracy.py)


def public_url(url: str) -> str:
    """The URL as stored: without user:password@ (a secret has no place in a result)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1]))


def auth_headers() -> dict:
    """OPENAI_API_KEY, as vLLM's client reads it (sent, never stored)."""
    key = os.environ.get("OPENAI_API_KEY")
    return {"Authorization": f"Bearer {key}"} if key else {}


class Serving(Workload):
    name = "serving"
    category = "serving"
    description = "Streaming client for OpenAI-compatible servers: vllm-bench-serve summary, goodput, per-GPU throughput"
    axes = AXES
    choices = {"endpoint": ENDPOINTS, "dataset": DATASETS, "ramp_up": RAMPS}
    suites = ()  # needs a server the user started: runs only when named with --set url=
    own_sets = tuple(AXES)   # cases() reads every --set itself (lists expanded there, num_prompts per point)
    timeout_s = 86400.0  # the runner's watchdog: each point already ends at its own deadline (point_timeout_s)

    def __init__(self):
        self._servers: dict[tuple, Server] = {}
        self._sharegpt: dict[str, list] = {}
        self._calls: Counter = Counter()
        self._samplers: dict[tuple, tuple] = {}

    # -- the plan ------------------------------------------------------------------------------
    def server(self, st: Settings) -> Server:
        """/v1/models (alias, identity) and the tokenizer, once per URL and model."""
        import asyncio

        from gpuparity.workloads.serving.client import fetch_models
        from gpuparity.workloads.serving.datasets import load_tokenizer
        from gpuparity.workloads.serving.server_info import ASK_TIMEOUT_S, ask, build_identity
        from gpuparity.workloads.serving.wire import ProtocolError

        key = (st.url, st.model, st.tokenizer)
        if key in self._servers:
            return self._servers[key]
        wait = min(st.timeout_s or 30.0, 30.0)
        try:
            cards, identity = asyncio.run(fetch_models(st.url, wait, auth_headers()))
            note = None
        except ProtocolError as exc:
            if not st.model:
                raise UserError(f"could not list models at {st.url}/models ({exc}): pass --set model=NAME") from None
            cards, identity, note = [], {}, f"/models not read: {exc}"
        model = st.model or cards[0].id
        try:
            answers = asyncio.run(ask(st.url, auth_headers(), min(wait, ASK_TIMEOUT_S)))
        except asyncio.TimeoutError:
            answers = {}
        served = [c for c in cards if c.id == model] or cards
        server = Server(model=model, models=[{"id": c.id, "owned_by": c.owned_by} for c in cards[:20]],
                        identity=identity, tokenizer=load_tokenizer(st.tokenizer, model), note=note,
                        info=build_identity(answers, served, st.declared, st.launch))
        self._servers[key] = server
        return server

    def check_options(self, o: dict) -> tuple:
        """Every --set value checked, without asking the server (before one is launched); returns
        (settings, endpoint, dataset, loads, ignore_eos, range ratio, prefix shape, lengths, num_prompts)."""
        st = Settings.from_options(o)
        endpoint = o.get("endpoint", "completions")
        if endpoint not in ENDPOINTS:
            raise UserError("--set endpoint= takes completions or chat")
        dataset = o.get("dataset", "random")
        if dataset not in DATASETS:
            raise UserError(f"--set dataset= takes {', '.join(DATASETS)}")
        loads = self._loads(o)          # every setting is checked before the server is asked
        ignore_eos = _bool(o, "ignore_eos", False)
        ratio = _one(o, "range_ratio", float, 0.0, lo=0.0, hi=0.99)
        prefix = (_one(o, "prefix_len", int, None, lo=1), _one(o, "num_prefixes", int, 4, lo=1))
        if dataset == "prefix" and prefix[0] is None:
            raise UserError("--set dataset=prefix needs --set prefix_len=N (tokens shared by prompts)")
        if dataset == "sharegpt" and not st.dataset_path:
            raise UserError("--set dataset=sharegpt needs --set dataset_path=FILE (ShareGPT-format JSON)")
        out_lens = int_list(o, "output_len", [DEFAULT_LEN]) if dataset != "sharegpt" or o.get("output_len") else [None]
        lengths = list(product([None] if dataset == "sharegpt" else int_list(o, "input_len", [DEFAULT_LEN]), out_lens))
        n_fixed = _one(o, "num_prompts", int, None, lo=1)
        return st, endpoint, dataset, loads, ignore_eos, ratio, prefix, lengths, n_fixed

    def cases(self, suite: str, ctx: Context) -> list[dict]:
        from gpuparity.workloads.serving.datasets import dataset_name, file_digest

        st, endpoint, dataset, loads, ignore_eos, ratio, prefix, lengths, n_fixed = self.check_options(ctx.options)
        server = self.server(st)
        base: dict = {"dataset": dataset_name(dataset, server.tokenizer), "endpoint": endpoint,
                      "ignore_eos": ignore_eos, "seed": st.seed}
        if dataset == "sharegpt":
            base.update(dataset_file=os.path.basename(st.dataset_path), dataset_sha=file_digest(st.dataset_path))
        if ratio:
            base["range_ratio"] = ratio
        if dataset == "prefix":
            base.update(prefix_len=prefix[0], num_prefixes=prefix[1])
        cases = []
        for (i_len, o_len), (load, size) in product(lengths, loads):
            p = dict(base)
            if i_len is not None:
                p["input_len"] = i_len
            if o_len is not None:
                p["output_len"] = o_len
            cases.append(dict(p, **load, num_prompts=n_fixed or 10 * size))
        return cases

    @staticmethod
    def _loads(o: dict) -> list[tuple[dict, int]]:
        """(load params, its parallelism for the default num_prompts) per point."""
        cap = _one(o, "max_concurrency", int, 0, lo=1)
        extra = {"max_concurrency": cap} if cap else {}
        burst = _one(o, "burstiness", float, 1.0, lo=0.01)
        if burst != 1.0:
            extra["burstiness"] = burst
        if o.get("ramp_up"):
            if o["ramp_up"] not in RAMPS:
                raise UserError("--set ramp_up= takes linear or exponential")
            lo, hi = (_one(o, k, float, None, lo=1e-6) for k in ("ramp_start_rps", "ramp_end_rps"))
            if lo is None or hi is None:
                raise UserError("--set ramp_up= needs --set ramp_start_rps=R --set ramp_end_rps=R")
            return [(dict(ramp_up=o["ramp_up"], ramp_start_rps=lo, ramp_end_rps=hi, **extra), cap or 10)]
        if o.get("request_rate"):
            if o.get("concurrency"):
                raise UserError("--set concurrency= and request_rate= exclude each other: "
                                "cap a rate with --set max_concurrency=N")
            # "inf" stays a string in params: run documents are strict JSON (no Infinity)
            return [(dict(request_rate=r if math.isfinite(r) else "inf", **extra), cap or 10)
                    for r in float_list(o, "request_rate")]
        if extra:
            raise UserError("--set max_concurrency= / burstiness= go with --set request_rate=")
        return [({"concurrency": c}, c) for c in int_list(o, "concurrency", [1, 4, 16])]

    def _prompts(self, params: dict, st: Settings, server: Server, trial: int, n: int) -> list:
        import random

        from gpuparity.workloads.serving import datasets as ds

        rng = random.Random(f"{canonical(params)}:{trial}")
        tok = server.tokenizer
        kind = params["dataset"].split("_")[0]
        if kind == "sharegpt":
            path = st.dataset_path
            if path not in self._sharegpt:
                self._sharegpt[path] = ds.load_sharegpt(path)
            pairs = ds.sharegpt_prompts(rng, tok, self._sharegpt[path], n, params.get("output_len"))
        elif kind == "prefix":
            pairs = ds.prefix_prompts(rng, tok, n, params["input_len"], params["output_len"],
                                      params["prefix_len"], params["num_prefixes"])
        else:
            pairs = ds.random_prompts(rng, tok, n, params["input_len"], params["output_len"],
                                      params.get("range_ratio", 0.0))
        return ds.as_prompts(pairs, params["endpoint"] == "chat", tok)

    def plan(self, params: dict, st: Settings, server: Server, trial: int):
        import random

        from gpuparity.workloads.serving.client import PointPlan, arrival_times

        n = params["num_prompts"]
        prompts = self._prompts(params, st, server, trial, n + st.warmup)
        measured, warm = prompts[:n], prompts[n:]
        most = max(p.max_tokens for p in prompts)
        timeout = st.timeout_s or 60.0 + 0.25 * most
        rng = random.Random(f"arrivals:{canonical(params)}:{trial}")
        ramp = (params["ramp_up"], params["ramp_start_rps"], params["ramp_end_rps"]) if params.get("ramp_up") else None
        rate = params.get("request_rate")
        arrivals = None
        if "concurrency" not in params:
            arrivals = arrival_times(n, math.inf if rate in (None, "inf") else float(rate),
                                     params.get("burstiness", 1.0), rng, ramp)
        plan = PointPlan(url=f"{st.url}/{'chat/completions' if params['endpoint'] == 'chat' else 'completions'}",
                         model=server.model, prompts=measured, warmup=warm,
                         concurrency=params.get("concurrency", 0), arrivals=arrivals,
                         max_concurrency=params.get("max_concurrency", 0), ignore_eos=params["ignore_eos"],
                         timeout_s=timeout, headers=auth_headers(), temperature=st.temperature,
                         max_bytes=st.max_bytes or (1 << 20) + 4096 * most)
        waves = math.ceil(n / plan.parallel) + math.ceil(len(warm) / plan.parallel) + 1
        plan.point_timeout_s = st.point_timeout_s or timeout * waves + (arrivals[-1] if arrivals else 0.0)
        return plan

    def sampler(self, st: Settings, ctx: Context):
        """(telemetry sampler, what it measures) for this server: its GPUs summed where they are
        this machine's, else nothing with the reason (serving/power.py); opened once per server."""
        from gpuparity.workloads.serving.power import server_sampler

        key = (st.url, st.declared.get("gpus"), (st.launch or {}).get("pid"))
        if key not in self._samplers:
            self._samplers[key] = server_sampler(st.url, st.launch, st.declared.get("gpus"), ctx.fingerprint,
                                                 ctx.telemetry)
        return self._samplers[key]

    def accuracy(self, st: Settings, server: Server, params: dict, ctx: Context) -> dict | None:
        """The accuracy eval's result for this server, asked once (serving/accuracy.py), untimed."""
        import asyncio

        from gpuparity.workloads.serving.accuracy import run_eval

        if not st.accuracy or (server.accuracy is None and (getattr(ctx, "trial", None) or 1) > 1):
            return None     # asked in the first round (a worker process per round would ask again)
        if server.accuracy is None:
            ctx.say(f"accuracy eval: {st.accuracy} problems")
            server.accuracy = asyncio.run(run_eval(st.url, server.model, params["endpoint"] == "chat", st.accuracy,
                                                   st.seed, min(st.timeout_s or 60.0, 60.0), auth_headers()))
        return server.accuracy

    # -- one trial -----------------------------------------------------------------------------
    def execute(self, params: dict, ctx: Context) -> dict:
        import asyncio

        from gpuparity.results.schema import mark
        from gpuparity.results.serving_summary import load_label, request_rows, summarize_point
        from gpuparity.workloads.serving.client import run_point
        from gpuparity.workloads.serving.launch import server_status

        st = Settings.from_options(ctx.options)
        result = new_result(self.name, self.category, params, None)
        gone = server_status(st.launch)
        if gone is not None:        # the server gpuparity launched has exited: nothing to measure, nothing lost
            result["info"]["server_exit"] = gone
            return mark(result, "failed", exit_words(gone, "before this point"))
        server = self.server(st)
        self._calls[result["key"]] += 1
        trial = getattr(ctx, "trial", None) or self._calls[result["key"]]
        plan = self.plan(params, st, server, trial)
        label = load_label(params)
        accuracy = self.accuracy(st, server, params, ctx)
        progress = Progress(ctx, label, len(plan.prompts))
        if plan.warmup:
            ctx.say(f"{label}: {len(plan.warmup)} warm-up requests")
        sampler, scope = self.sampler(st, ctx)
        with telemetry_window(replace(ctx, telemetry=sampler)) as tele:  # the server's GPUs, where they are here
            outcome = asyncio.run(run_point(plan, progress.done))
        result["telemetry"] = tele.get("result")
        if result["telemetry"] is not None:
            result["telemetry"]["scope"] = scope
        result["info"]["power_scope"] = scope      # whose power a per-watt figure would use, or why none
        rows = request_rows(outcome.records, trial, token_counts(outcome.records, plan.prompts, server.tokenizer))
        s = summarize_point(rows, st.gpus, st.percentiles, st.slos, getattr(server.tokenizer, "name", None))
        s["warmup"] = {"requests": len(outcome.warmup), "completed": sum(r.ok for r in outcome.warmup)}
        s["deadline_hit"] = outcome.deadline_hit
        result["info"].update(
            curve_key=curve_key(params), url=public_url(st.url), served_model=server.model, models=server.models,
            server=server.identity or outcome.headers, server_note=server.note, trial_seed=trial,
            server_identity=dict(server.info, machine=server_machine(st, ctx)), accuracy=accuracy,
            timeout_s=plan.timeout_s, point_timeout_s=plan.point_timeout_s, max_response_bytes=plan.max_bytes,
            serving=s, requests=rows)
        result = finish(result, s, params)
        gone = server_status(st.launch)
        if gone is not None:
            result["info"]["server_exit"] = gone
            if result["status"] == "failed":
                result["reason"] = f"{exit_words(gone, 'during this point')}; {result['reason']}"
        return result

    def merge_trials(self, trials: list[dict], ctx: Context) -> dict:
        """The base merge, then the point's summary over its rounds, its interval from them with
        the requests' as a floor, and "unstable" judged on the rounds (serving_summary)."""
        from gpuparity.results.serving_summary import (
            INVALID_REQUESTS,
            merge_summaries,
            point_figure,
            round_flags,
            summarize_point,
        )

        merged = merge_trials(trials, ctx.spec)
        infos = [t.get("info") or {} for t in trials]
        summaries = [i["serving"] for i in infos if i.get("serving")]
        if not summaries:
            return merged
        # the runner numbers the trials (info.trial); a worker process cannot count them itself
        rows = [dict(row, trial=i.get("trial") or row["trial"]) for i in infos for row in i.get("requests") or []]
        first = summaries[0]
        slos = {k[:-3]: v for k, v in ((first.get("goodput") or {}).get("slos") or {}).items()}
        pooled = summarize_point(rows, first["gpus"], first["percentiles"], slos, first["usage"]["tokenizer"])
        metric = merged.get("metric") or {}
        if merged["status"] == "ok":
            ok = [t for t in merged.get("trials") or [] if t.get("status", "ok") == "ok" and t.get("value")]
            c = point_figure([t["value"] for t in ok], [t.get("log_se") for t in ok])
            metric.update({k: c[k] for k in ("value", "ci_low", "ci_high", "log_se", "spread", "trials", "ci_basis")})
            if c.get("ci_floor"):
                metric["ci_floor"] = c["ci_floor"]
            merged["flags"] = round_flags(merged) + ([INVALID_REQUESTS] if pooled["invalid"] and INVALID_REQUESTS
                                                     not in (merged.get("flags") or []) else [])
        s = merge_summaries(summaries, pooled, metric.get("value") if merged["status"] == "ok" else None)
        s["log_se"] = metric.get("log_se")
        info = merged.setdefault("info", {})
        info.update(serving=s, requests=rows)
        table_of(merged, s)
        if merged["status"] == "ok":
            fill_derived(merged, s)
        return merged


def exit_words(status: dict, when: str) -> str:
    """Why a point of a launched server failed: its exit code and log tail."""
    return (f"the server gpuparity launched exited (code {status['exit_code']}) {when}; its log ends: "
            f"{status['log_tail'][-600:] or '(empty)'}")


def server_machine(st: Settings, ctx: Context) -> dict:
    """The server's machine: this run's host and stack where gpuparity launched the server here,
    else unknown (the run's fingerprint is the client's)."""
    from gpuparity.results.schema import run_stack

    if not st.launch:
        return {"known": False, "why": "the server was not launched by gpuparity: the run's fingerprint is the "
                                      "client's, not necessarily the server's"}
    fp = ctx.fingerprint or {}
    return {"known": True, "host": st.launch.get("host"), "product": fp.get("product"), "backend": fp.get("backend"),
            "stack": run_stack(fp), "driver": fp.get("driver_version"), "device_count": fp.get("device_count"),
            "visible_devices": st.launch.get("visible_devices")}


WORKLOADS = [Serving()]
__all__ = ["Serving", "Settings", "finish", "token_counts"]
