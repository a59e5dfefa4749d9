"""Read SemiAnalysis InferenceX results (the rows its /api/v1/benchmarks returns) into reference rows.

One row is one serving configuration at one client concurrency: hardware, framework (the engine:
sglang, atom, trt, vllm ...), model and precision, spec_method (none | mtp: speculative decoding),
disagg and is_multinode, the prefill and decode parallelism (tp, ep, dp_attention, workers), the GPU
counts, isl / osl (input and output sequence lengths), conc, image (the container: engine and
ROCm/CUDA version), date, run_url (the CI run that measured it) and metrics: tput_per_gpu (input +
output tokens/s per GPU), median_intvty (interactivity: tokens/s per user = 1 / TPOT) and the
latency percentiles.

Read here: single-node aggregated rows (is_multinode and disagg false, prefill and decode on the same
GPUs); multi-node and disaggregated rows are listed as not read (their GPU counts need another
model). The GPUs of a row are its decode tp (the API's num_decode_gpu is tp x ep on single-node EP
rows). The figures are checked as the evidence rules ask: interactivity x median TPOT = 1 and input +
output = total throughput, within 1e-6; a row that disagrees is kept and marked. The stack comes from
the image tag ("rocm7.2.1", "rocm700" -> ROCm 7.0.0, "cu130" -> CUDA 13.0); a row with no image has
an unknown stack version.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from gpuparity import validate
from gpuparity.errors import UserError
from gpuparity.evidence.mlperf import Count, Name, OptName, _show

SOURCE = "inferencex"
SUBMITTER = "SemiAnalysis InferenceX"
CATEGORY = "inferencex"
UNITS = "tokens/s per GPU"
NOTE = ("InferenceX (SemiAnalysis): total (input + output) tokens/s per GPU at a measured interactivity "
        "(tokens/s per user); compared along each GPU's best-throughput envelope at equal interactivity.")
MODELS = {"dsr1": "deepseek-r1", "deepseek-r1": "deepseek-r1", "gptoss": "gpt-oss-120b", "gpt-oss-120b": "gpt-oss-120b",
          "llama70b": "llama3.3-70b", "qwen3": "qwen3"}
MAX_ROWS = 200_000
TOLERANCE = 1e-6


def _metric(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PydanticCustomError("metric", "not a number ({v})", {"v": _show(value)})
    number = float(value)
    if not math.isfinite(number) or number < 0 or number > 1e15:
        raise PydanticCustomError("metric", "not a finite number >= 0 ({v})", {"v": _show(value)})
    return number


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise PydanticCustomError("flag", "not true or false ({v})", {"v": _show(value)})


Metric = Annotated[float, BeforeValidator(_metric)]
Flag = Annotated[bool, BeforeValidator(_flag)]
MetricKey = Annotated[str, Field(max_length=60, pattern=r"^[A-Za-z0-9_.]+$")]


class InferenceXRecord(BaseModel):
    """One API row (unknown fields are ignored; the ones read are checked)."""

    model_config = ConfigDict(extra="ignore")

    hardware: Name
    framework: Name
    model: Name
    precision: Name
    spec_method: OptName = "none"
    disagg: Flag = False
    is_multinode: Flag = False
    prefill_tp: Count = 0
    prefill_ep: Count = 0
    prefill_dp_attention: Flag = False
    decode_tp: Count
    decode_ep: Count = 1
    decode_dp_attention: Flag = False
    num_prefill_gpu: Count = 0
    num_decode_gpu: Count = 0
    isl: Count
    osl: Count
    conc: Count
    image: OptName | None = None
    date: Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$")]
    run_url: Annotated[str, Field(max_length=500, pattern=r"^https://[^\s<>\"']+$")]
    metrics: Annotated[dict[MetricKey, Metric], Field(max_length=200)]

    @field_validator("metrics")
    @classmethod
    def _figures(cls, metrics: dict) -> dict:
        for key in ("tput_per_gpu", "median_intvty"):
            if not metrics.get(key, 0) > 0:
                raise PydanticCustomError("metric", "{k} is missing or not above 0", {"k": key})
        return metrics


ENGINES = {"trt": "tensorrt_llm", "trtllm": "tensorrt_llm", "sglang": "sglang", "vllm": "vllm", "atom": "atom"}


def image_versions(image: str | None, framework: str = "") -> dict:
    """Versions an image tag names: rocm, cuda and the engine's ('rocm/atom:rocm7.2.1-...-atom0.1.2',
    'lmsysorg/sglang:v0.5.9-rocm700-mi35x', 'nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc6.post2')."""
    if not image:
        return {}
    tag = image.rsplit(":", 1)[-1][:300].lower()
    out = {}
    m = re.search(r"rocm[-_]?(\d{1,2}\.\d{1,2}(?:\.\d{1,3})?)", tag)
    if m:
        out["rocm"] = m.group(1)
    elif m := re.search(r"rocm(\d)(\d)(\d)(?!\d)", tag):
        out["rocm"] = ".".join(m.groups())
    m = re.search(r"(?<![a-z])cu(\d{2})(\d)(?!\d)", tag) or re.search(r"cuda[-_]?(\d{1,2})\.(\d)", tag)
    if m:
        out["cuda"] = f"{int(m.group(1))}.{m.group(2)}"
    engine = ENGINES.get(framework.lower(), framework.lower()[:40] or "engine")
    m = re.match(r"v?(\d{1,3}\.\d{1,3}\.\d{1,3}[a-z0-9.]*)", tag) or \
        re.search(rf"{re.escape(framework.lower()[:40])}[-_]?v?(\d{{1,3}}\.\d{{1,3}}\.\d{{1,3}})", tag)
    if m and framework:
        out[engine] = m.group(1).rstrip(".-")
    return out


def parse_rows(records: Any, origin: str = "InferenceX rows") -> tuple[list[dict], list[dict]]:
    """(rows, unreadable): unreadable entries are {'row', 'reason'} (1-based)."""
    if not isinstance(records, list):
        raise UserError(f"{origin}: not InferenceX results (top level is not an array of rows)")
    if len(records) > MAX_ROWS:
        raise UserError(f"{origin}: more than {MAX_ROWS} rows")
    rows, bad, seen = [], [], {}
    for index, rec in enumerate(records, start=1):
        try:
            if not isinstance(rec, dict):
                raise UserError(f"row {index}: not an object")
            row = parse_row(validate.parse(InferenceXRecord, rec, f"row {index}"), index)
        except UserError as exc:
            bad.append({"row": index, "where": f"row {index}", "reason": str(exc).split(": ", 1)[-1]})
            continue
        if row["ref_id"] in seen:
            bad.append({"row": index, "where": f"row {index}", "reason": f"repeats row {seen[row['ref_id']]} "
                        "(same configuration, concurrency and date)"})
            continue
        seen[row["ref_id"]] = index
        rows.append(row)
    return rows, bad


def parse_row(r: InferenceXRecord, index: int) -> dict:
    from gpuparity.evidence.software import _stack
    from gpuparity.platform.specs import lookup

    if r.is_multinode or r.disagg:
        raise UserError(f"row {index}: multi-node or disaggregated serving: not read (single-node rows only)")
    if r.decode_tp < 1:
        raise UserError(f"row {index}: decode_tp is 0")
    if (r.prefill_tp, r.prefill_ep) not in ((0, 0), (r.decode_tp, r.decode_ep)):
        raise UserError(f"row {index}: prefill parallelism differs from decode on an aggregated row")
    spec = lookup(r.hardware)
    vendor = (spec or {}).get("vendor")
    versions = image_versions(r.image, r.framework)
    model = MODELS.get(r.model.lower(), r.model.lower())
    spec_method = (r.spec_method or "none").lower()
    m = r.metrics
    checks = []
    if m.get("median_tpot") and abs(m["median_intvty"] * m["median_tpot"] - 1) > TOLERANCE:
        checks.append("median interactivity x median TPOT is not 1")
    if "input_tput_per_gpu" in m and "output_tput_per_gpu" in m and \
            abs(m["input_tput_per_gpu"] + m["output_tput_per_gpu"] - m["tput_per_gpu"]) > TOLERANCE * m["tput_per_gpu"]:
        checks.append("input + output throughput is not the total")
    parallel = f"tp{r.decode_tp}-ep{r.decode_ep}" + ("-dpa" if r.decode_dp_attention else "")
    config = f"{r.framework.lower()} {parallel}" + (f" {spec_method}" if spec_method != "none" else "")
    return {
        "ref_id": f"{SOURCE}:{model}/{r.precision.lower()}/{r.hardware.lower()}/{r.framework.lower()}/{spec_method}/"
                  f"{parallel}/{r.isl}x{r.osl}/c{r.conc}/{r.date}",
        "source": SOURCE, "result_id": r.run_url, "round": None, "date": r.date, "submitter": SUBMITTER,
        "system": config, "category": CATEGORY, "model": model, "model_family": model, "model_api": r.model,
        "scenario": f"{r.isl}/{r.osl}", "isl": r.isl, "osl": r.osl, "conc": r.conc,
        "framework": r.framework.lower(), "spec_method": spec_method, "image": r.image,
        "parallelism": {"tp": r.decode_tp, "ep": r.decode_ep, "dp_attention": r.decode_dp_attention},
        "num_decode_gpu_published": r.num_decode_gpu,
        "precision": r.precision.lower(), "software": r.image or "", "versions": versions, "version_notes": [],
        "stack": _stack(versions, r.image or "", vendor), "accelerator": r.hardware, "accelerator_name": r.hardware.upper(),
        "spec_id": spec["id"] if spec else None, "variant": None, "base_spec_id": None, "mixed_accelerators": False,
        "accelerators_per_node": r.decode_tp, "nodes": 1, "accelerators": r.decode_tp,
        "result": m["tput_per_gpu"], "units": UNITS, "per_accelerator": m["tput_per_gpu"], "throughput": None,
        "interactivity": m["median_intvty"], "metrics": dict(m), "figure_checks": checks,
        "per_gpu_eligible": False, "availability": "available", "inferred": False,
        "url": r.run_url, "note": NOTE,
    }


def read(path: str) -> tuple[list[dict], list[dict]]:
    return parse_rows(validate.load_json(str(path), what="InferenceX results"), str(path))
