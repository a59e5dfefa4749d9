"""What the peers' parsers share: their files' points become gpuparity serving results, in a run
document that goes through the one gate every document from outside goes through
(results/document.validate_run: its schema, then every figure recomputed from its request rows).

- A point with per-request data (`point_result`): its requests become request rows
  (serving_summary's shape, times in integer microseconds from the point's first send), and every
  figure is redone by serving_summary from them: the peer's own summary is kept beside, in
  info.imported.stated, never used. The output counts are the peer's (vLLM's and guidellm's are the
  server's usage, aiperf's its tokenizer's), held to what the file's streamed text can hold where
  it has the text (serving_summary.token_problem).
- A point with only a summary (`stated_result`): the peer's output throughput is the figure
  (metric.samples, one rate), flagged unverified_tokens: no comparison claims anything from it.
- Params: the key of gpuparity's own point of the same workload (dataset, endpoint, ignore_eos,
  seed, input_len, output_len, the load, num_prompts), so `compare` and `report` line imported
  points up with measured ones and with each other. The model and server, as for a measured
  point, are in info (served_model, url): two servers naming one model differently still compare.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

DEFAULT_PERCENTILES = (50.0, 90.0, 99.0)


@dataclass(frozen=True)
class Declared:
    """What the user says of the server a peer's file measured (`import --gpus N --label L
    --platform P --gpu-model M`): its GPUs (figures per GPU; without them per server), a label,
    its stack ("rocm 6.4", "cuda 12.8", "cpu"; without it the run's stack is "unknown", never
    "cpu") and its accelerator ("H100 SXM", "MI300X": matched to its own datasheet row or none,
    platform/specs.identify, whose price per GPU-hour gives the cost per million tokens)."""

    gpus: int | None = None
    label: str | None = None
    platform: str | None = None
    gpu_model: str | None = None

    def given(self) -> bool:
        return any(v is not None for v in asdict(self).values())


NOTHING_DECLARED = Declared()


def us(seconds: float) -> int:
    return int(round(seconds * 1e6))


def one_line(text, limit: int = 300) -> str:
    """A peer's message fit to store and print (control characters as escapes, bounded)."""
    from gpuparity.validate import terminal_safe

    s = terminal_safe(str(text).encode("utf-8", "replace").decode("utf-8"))
    return s if len(s) <= limit else s[:limit] + "..."


def row(i: int, ok: bool, error: str | None, start_s: float | None, end_s: float | None, ttft_s: float | None,
        gaps_s: list[float], input_tokens: int | None, output_tokens: int | None, max_tokens: int | None,
        text: str | None = None, chunks: int | None = None, last_s: float | None = None) -> dict:
    """One imported request as a request row (serving_summary.request_rows' shape): times in
    seconds from the point's first send. `chunks`: the responses it streamed (any may have been
    without text), `text`: its output; both bound its count (token_problem). `last_s`: when its
    last token came, where the peer records it apart from its gaps (results/peer_rules.py)."""
    out = output_tokens if ok else None
    extra = {"last_token_us": us(last_s)} if ok and last_s is not None else {}
    return {**extra, "trial": 1, "i": i, "ok": ok, "error": None if ok else one_line(error or "failed"),
            "timeout": False, "invalid": False,
            "start_us": us(start_s) if start_s is not None else None,
            "end_us": us(end_s) if end_s is not None else None,
            "ttft_us": us(ttft_s) if ok and ttft_s is not None else None,
            "itl_us": [us(g) for g in gaps_s] if ok else [],
            "max_tokens": max_tokens or out or 0,
            "input_tokens": input_tokens or 0, "output_tokens": out or 0, "input_estimated": input_tokens is None,
            "server_input_tokens": input_tokens, "server_output_tokens": out, "client_input_tokens": None,
            "client_output_tokens": None, "reencoded_tokens": None, "pieces": None,
            "empty_chunks": chunks if ok else None,
            "text_bytes": len(text.encode("utf-8", "replace")) if ok and text is not None else None,
            "delta_tokens": None}


def point_params(endpoint: str, ignore_eos: bool, input_len: int | None, output_len: int | None, load: dict,
                 num_prompts: int) -> dict:
    """The key's params of gpuparity's own point of this workload (workloads/serving: cases)."""
    p: dict = {"dataset": "random", "endpoint": endpoint, "ignore_eos": bool(ignore_eos), "seed": 0}
    if input_len:
        p["input_len"] = int(input_len)
    if output_len:
        p["output_len"] = int(output_len)
    return dict(p, **load, num_prompts=int(num_prompts))


def same(values: list) -> int | None:
    """The one value every request shares (a fixed length), else None."""
    known = {v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0}
    return known.pop() if len(known) == 1 else None


def check_rows(rows: list[dict], origin: str) -> None:
    """Times a request cannot have: an end before its start, a first token after its end, gaps
    longer than the request (one line, naming the request)."""
    from gpuparity.errors import UserError

    for r in rows:
        start, end = r["start_us"], r["end_us"]
        if start is None or end is None or end < start:
            raise UserError(f"{origin}: request {r['i']}: it ends before it starts")
        if r["ok"] and (r["ttft_us"] > end - start or sum(r["itl_us"]) > end - start - r["ttft_us"] + len(r["itl_us"])):
            raise UserError(f"{origin}: request {r['i']}: its first token or its gaps run past its end")
        last = r.get("last_token_us")
        if r["ok"] and last is not None and not start + r["ttft_us"] - 1 <= last <= end + 1:
            raise UserError(f"{origin}: request {r['i']}: its last token is not between its first token and its end")


def point_result(params: dict, rows: list[dict], counted_by: str, info: dict, origin: str,
                 percentiles=DEFAULT_PERCENTILES, gpus: int | None = None) -> dict:
    """A point from its request rows, as the serving workload makes a one-round point: every figure
    from serving_summary; `counted_by` names whose output counts they are (usage.tokenizer)."""
    from statistics import NormalDist

    from gpuparity.measure.stats import summarize
    from gpuparity.results import serving_summary as sv
    from gpuparity.results.figure import LEVEL, UNVERIFIED_TOKENS, set_metric
    from gpuparity.results.schema import mark, new_result

    check_rows(rows, origin)
    for r in rows:                      # a count its own text cannot hold is the peer's file lying
        problem = sv.token_problem(r, True) if r["ok"] else None
        if problem:
            r.update(ok=False, invalid=True, error=one_line(problem), ttft_us=None, itl_us=[])
    result = new_result("serving", "serving", params, None)
    info = dict(info, curve_key=sv.curve_key(params), requests=rows)
    result["info"] = info
    s1 = sv.summarize_point(rows, gpus, percentiles, None, counted_by)
    if not s1["completed"]:
        info["serving"] = s1
        sv.table_of(result, s1)
        return mark(result, "failed", f"all {s1['requests']} requests of the file failed")
    set_metric(result, "tokens", s1["throughput_per_gpu"], s1["log_se"])
    metric = result["metric"]
    metric.update(unit=sv.figure_unit(gpus), spread=None)
    result["flags"] = ([UNVERIFIED_TOKENS] if not counted_by else []) + ([sv.INVALID_REQUESTS] if s1["invalid"] else [])
    samples = [(r["end_us"] - r["start_us"]) / 1e6 for r in rows if r["ok"]]
    result["samples"] = samples
    z = NormalDist().inv_cdf(1 - (1 - LEVEL) / 2)
    result["summary"] = dict(summarize(samples), of="E2E latency (s)")
    if s1["log_se"] is not None:
        result["summary"]["rel_noise"] = math.expm1(z * s1["log_se"])
    result["trials"] = [{"trial": 1, "status": "ok", "n": len(samples), "value": metric["value"],
                         "log_se": metric["log_se"], "flags": []}]
    s = sv.merge_summaries([s1], s1, metric["value"])
    s["log_se"] = metric["log_se"]
    info["serving"] = s
    sv.fill_derived(result, s)
    sv.table_of(result, s)
    return result


def stated_result(params: dict, rate: float | None, stated: dict, info: dict, gpus: int | None = None,
                  rebuilt: dict | None = None, metadata: dict | None = None) -> dict:
    """A point the file gives only as its summary: the peer's output throughput is the figure (one
    rate, per GPU where `gpus` is declared; metric.samples), flagged unverified_tokens (nothing
    here can redo it: no claim rests on it). Its info.table shows every figure the file states,
    under the peer's names and marked as the peer's, unverified (`show`), with `rebuilt` beside
    where per-request latencies let some be redone (stated_table)."""
    from gpuparity.results.figure import UNVERIFIED_TOKENS, set_metric
    from gpuparity.results.schema import mark, new_result
    from gpuparity.results.serving_summary import curve_key, load_label

    result = new_result("serving", "serving", params, None)
    result["info"] = dict(info, curve_key=curve_key(params))
    if not rate or rate <= 0:
        return mark(result, "failed", "the file states no output throughput")
    value = float(rate) / (gpus or 1)
    set_metric(result, "tokens", value, None)
    result["metric"].update(unit="tokens/s/GPU" if gpus else "tokens/s", samples=[value], spread=None)
    result["flags"] = [UNVERIFIED_TOKENS]
    result["info"]["table"] = stated_table(f"{curve_key(params)} {load_label(params)}", info["imported"]["tool"], stated,
                                           rebuilt, gpus, metadata)
    return result


def stated_table(title: str, tool: str, stated: dict, rebuilt: dict | None, gpus: int | None,
                 metadata: dict | None = None) -> dict:
    """The figures a summary-only file states, as `show` prints a table: each under the peer's
    own name, marked as the peer's (unverified: no per-request data to redo them); `rebuilt`:
    {name: value} of the same figures redone from what per-request data the file has; the
    file's metadata (vLLM's --metadata gpu=... tp=...) last, as written."""
    def num(v) -> str:
        return "" if v is None else f"{v:,.2f}" if isinstance(v, float) else str(v)

    rows = [[name, num(v)] + ([num((rebuilt or {}).get(name))] if rebuilt else [])
            for name, v in stated.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    rows += [[name, "", num(v)] for name, v in (rebuilt or {}).items() if name not in stated]
    if gpus:
        rate = next((v for k, v in stated.items() if k in ("output_throughput", "output_token_throughput.avg",
                                                              "output_tokens_per_second.mean")), None)
        if isinstance(rate, (int, float)):
            rows.append([f"output throughput per GPU (tok/s/GPU, {gpus} GPUs as declared at import)",
                         num(rate / gpus)] + ([""] if rebuilt else []))
    rows += [[f"metadata {k}", str(v)] + ([""] if rebuilt else []) for k, v in (metadata or {}).items()]
    cols = ["metric (the file's name)", f"{tool}'s value (unverified: its own summary)"]
    return {"title": f"{title} (summary only: no per-request data)",
            "columns": cols + (["rebuilt from its per-request latencies"] if rebuilt else []), "rows": rows}


def iso(epoch_s: float, origin: str = "file") -> str:
    """An epoch time as ISO (UTC); one that is no date is refused (one line)."""
    from gpuparity.errors import UserError

    try:
        return datetime.fromtimestamp(epoch_s, tz=timezone.utc).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        raise UserError(f"{origin}: time {epoch_s!r} is not a date") from None


def run_document(tool: str, version: str | None, path: str, data: bytes, started_at: str, results: list[dict],
                 host: str | None, product: str | None = None, declared: Declared = NOTHING_DECLARED) -> dict:
    """The run document of one imported file. Its id comes from the file's bytes (and what was
    declared of it), so importing the same file again is "already stored"; its product is the
    server's GPU as declared (--gpu-model), else where the file names it (vLLM's gpu= metadata),
    matched to its datasheet row by the one identity function (platform/specs.identify: its own
    row or none, the reason kept in fingerprint.spec_match); its stack what `declared` says, else
    "unknown"."""
    from gpuparity.platform.specs import identify
    from gpuparity.results.schema import finite_json
    from gpuparity.version import BENCHMARK_VERSION, SCHEMA_VERSION, __version__

    slug = tool.split()[0].lower()
    # the ids of files imported before --gpu-model existed stay theirs: the field counts where it is given
    said = json.dumps({k: v for k, v in asdict(declared).items() if k != "gpu_model" or v is not None},
                      sort_keys=True).encode() if declared.given() else b""
    run_id = f"{slug}-{hashlib.sha256(data + said).hexdigest()[:16]}"
    product = declared.gpu_model or product
    spec, why = identify(product) if product else (None, "no datasheet: the file names no GPU (import --gpu-model "
                                                         "NAME names it)")
    fp = {"host": host, "vendor": (spec or {}).get("vendor"), "product": product or f"unknown (imported from {tool})",
          "backend": None, "torch_version": None, "stack": declared.platform or "unknown", "declared": asdict(declared),
          "spec": spec, "spec_match": why}
    return finite_json({
        "schema_version": SCHEMA_VERSION, "benchmark_version": BENCHMARK_VERSION, "gpuparity_version": __version__,
        "run_id": run_id, "started_at": started_at, "finished_at": started_at, "status": "complete", "host": host,
        "argv": ["import", os.path.basename(path)], "fingerprint": fp, "spec_id": (spec or {}).get("id"),
        "label": declared.label,
        "imported": {"tool": tool, "version": version, "file": os.path.basename(path)}, "results": results})


def imported_info(tool: str, version: str | None, path: str, model: str | None, url: str | None,
                  per_request: bool, stated: dict, settings: dict) -> dict:
    """info of an imported point: where it came from, the peer's own figures (never used: the
    figures are redone from the requests), the peer's settings that are not in the key."""
    from gpuparity.results.peers.fields import url_parts

    public = url_parts(url, path, "the server's URL")[0]
    return {"imported": {"tool": tool, "version": version, "file": os.path.basename(path),
                         "per_request": per_request, "stated": stated, "settings": settings},
            "served_model": model, "url": public}
