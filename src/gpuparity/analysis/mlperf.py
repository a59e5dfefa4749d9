"""Read the MLPerf Inference results summary (summary_results.json) into reference rows.

One file is a JSON array of flat objects, one per result (system x model x scenario). The
`ID` names a system submission and repeats across its models and scenarios, so a row's
ref_id is source:ID/model/scenario; the bare ID is kept as `result_id` for citation.
Every row is checked before any is returned: a file imports whole or not at all.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from gpuparity.errors import UserError

SOURCE = "mlperf-inference"
USAGE_NOTE = (
    "Per-accelerator throughput is derived (result / (accelerators per node x nodes)); it is not an "
    "MLPerf metric and is not verified by MLCommons. Cite the MLPerf result ID."
)
DIVISION_RULES = {
    "closed": "closed: reference model, accuracy target and run rules fixed; comparable across submitters",
    "open": "open: model, precision or method may change; not comparable with closed results",
    "network": "network: served over a network; not comparable with closed or open results",
}
THROUGHPUT_UNITS = ("tokens/s", "samples/s", "queries/s")
REQUIRED = ("ID", "Submitter", "Category", "System", "Model", "Scenario", "Accelerator", "a#", "Nodes",
            "Performance_Result", "Performance_Units")


def load_file(path: str | Path) -> list:
    """The JSON array in a .json or .json.gz file."""
    path = Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # gzip.BadGzipFile is an OSError
        raise UserError(f"{path}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if not isinstance(data, list):
        raise UserError(f"{path}: not an MLPerf results summary (top level is not an array)")
    return data


def parse_rows(records: list) -> list[dict]:
    """Reference rows for every record; UserError naming the first bad row (1-based)."""
    return [parse_row(rec, i) for i, rec in enumerate(records, start=1)]


def _bad(index: int, rec, what: str) -> UserError:
    rid = rec.get("ID") if isinstance(rec, dict) else None
    return UserError(f"row {index}{f' (ID {rid})' if rid else ''}: {what}")


def _count(value, index: int, rec, field: str, *, empty_ok: bool) -> int:
    """A whole number, given as int or digit string; '' (no accelerator) is 0 where allowed."""
    if empty_ok and value in ("", None):
        return 0
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.isdigit())):
        raise _bad(index, rec, f"field '{field}' is not a whole number ({value!r})")
    return int(value)


def parse_row(rec, index: int) -> dict:
    if not isinstance(rec, dict):
        raise _bad(index, rec, "not an object")
    for field in REQUIRED:
        if field not in rec:
            raise _bad(index, rec, f"field '{field}' is missing")
    for field in ("ID", "Category", "Model", "Scenario", "Performance_Units"):
        if not isinstance(rec[field], str) or not rec[field].strip():
            raise _bad(index, rec, f"field '{field}' is empty or not a string")
    value = rec["Performance_Result"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        raise _bad(index, rec, "field 'Performance_Result' is not a number")
    per_node = _count(rec["a#"], index, rec, "a#", empty_ok=True)
    nodes = _count(rec["Nodes"], index, rec, "Nodes", empty_ok=False)
    if nodes < 1:
        raise _bad(index, rec, "field 'Nodes' is less than 1")
    accel_raw = str(rec["Accelerator"] or "").strip()
    accel = map_accelerator(accel_raw)
    category = rec["Category"].strip().lower()
    result_id = rec["ID"].strip()
    units = rec["Performance_Units"].strip()
    total = per_node * nodes
    is_throughput = units.lower() in THROUGHPUT_UNITS
    per_accel = float(value) / total if is_throughput and total and not accel["mixed"] else None
    software = str(rec.get("Software") or "")
    versions = parse_software(software)
    precision = str(rec.get("weight_data_types") or "").strip()
    return {
        "ref_id": f"{SOURCE}:{result_id}/{rec['Model'].strip()}/{rec['Scenario'].strip()}",
        "source": SOURCE,
        "result_id": result_id,
        "round": str(rec.get("version") or "").lstrip("v") or result_id.lstrip("v").split("-")[0],
        "submitter": rec["Submitter"],
        "system": rec["System"],
        "availability": rec.get("Availability"),
        "suite": rec.get("Suite"),
        "category": category,
        "division_rules": DIVISION_RULES.get(category, f"{category}: not comparable with other divisions"),
        "model": rec["Model"].strip(),
        "scenario": rec["Scenario"].strip(),
        "precision": None if precision.upper() in ("", "UNSET") else precision.lower(),
        "software": software,
        "versions": versions,
        "stack": _stack(versions, software, accel["vendor"]),
        "accelerator": accel_raw or None,
        "accelerator_name": accel["name"],
        "spec_id": accel["spec_id"],
        "mixed_accelerators": accel["mixed"],
        "accelerators_per_node": per_node,
        "nodes": nodes,
        "accelerators": total,
        "result": float(value),
        "units": units,
        "throughput": float(value) if is_throughput else None,
        "per_accelerator": per_accel,
        "per_accelerator_derived": per_accel is not None,
        # Per-GPU aggregates take single-node, single-accelerator-type rows only.
        "per_gpu_eligible": per_accel is not None and nodes == 1,
        "note": USAGE_NOTE if per_accel is not None else None,
        "location": rec.get("Location"),
        "details": rec.get("Details"),
    }


# -- accelerator names --------------------------------------------------------------------------
# MLPerf spells parts as "Virtualized NVIDIA H200-SXM-141GB", "AMD Instinct MI300X-NPS1-SPX-192GB-750W",
# "AMD Instinct MI325X 256GB HBM3E (x16), AMD Instinct MI300X 192GB HBM3 (x8)". Partition modes,
# power caps and "(xN)" counts say nothing about which part it is.
_NOISE = re.compile(r"\bvirtuali[sz]ed\b|\(x\d+\)|\bnps\d\b|\b[sdqc]px\b|\b\d+\s*w\b", re.I)
_MEMORY = re.compile(r"(\d+)\s*gb?\b", re.I)
_FORM_FACTORS = ("nvl", "pcie")


def clean_accelerator(text: str) -> str:
    text = _NOISE.sub(" ", text.replace("-", " ").replace("_", " "))
    return re.sub(r"\s+", " ", text).strip()


def map_accelerator(text: str) -> dict:
    """{'name', 'spec_id', 'vendor', 'mixed'}; spec_id None when the part has no spec row."""
    if not text:
        return {"name": None, "spec_id": None, "vendor": None, "mixed": False}
    parts = [clean_accelerator(p) for p in text.split(",") if p.strip()]
    mapped = [_spec_for(p) for p in parts]
    if len({(m or {}).get("id", p) for m, p in zip(mapped, parts, strict=True)}) > 1:
        return {"name": "; ".join(parts), "spec_id": None, "vendor": None, "mixed": True}
    spec = mapped[0]
    vendor = spec["vendor"] if spec else next((v for v in ("AMD", "NVIDIA", "Intel")
                                               if v.lower() in text.lower()), None)
    return {"name": parts[0], "spec_id": spec["id"] if spec else None, "vendor": vendor, "mixed": False}


def _spec_for(name: str) -> dict | None:
    from gpuparity.platform.specs import match_spec

    spec = match_spec(name)
    if not spec:
        return None
    low, product = name.lower(), spec["product"].lower()
    # "H200-NVL" is not the SXM part even though the chip is the same: other power and links.
    if any(re.search(rf"\b{ff}\b", low) and ff not in product for ff in _FORM_FACTORS):
        return None
    mem = _MEMORY.search(name)
    if mem and spec.get("memory_gb") and abs(int(mem.group(1)) - spec["memory_gb"]) > 0.1 * spec["memory_gb"]:
        return None
    return spec


# -- software stack -----------------------------------------------------------------------------
_VER = r"v?(\d+\.\d+(?:\.\d+)?)"
_VER_LONG = r"v?(\d+(?:\.\d+)+(?:\.?(?:dev|rc|a|b|post)\d+)?)"
_SOFTWARE = {
    "rocm": re.compile(rf"\brocm[\s_-]*{_VER}", re.I),
    "cuda": re.compile(rf"\bcuda[\s_-]*{_VER}", re.I),
    "tensorrt_llm": re.compile(rf"\btensorrt[\s_-]*llm[\s_-]*{_VER}", re.I),
    "tensorrt": re.compile(rf"\btensorrt(?![\s_-]*llm)[\s_-]*{_VER}", re.I),
    "vllm": re.compile(rf"\bvllm[\s_-]*{_VER_LONG}", re.I),
    "sglang": re.compile(rf"\bsglang[\s_-]*{_VER_LONG}", re.I),
    "pytorch": re.compile(rf"\bpytorch[\s_-]*{_VER_LONG}", re.I),
}
_ROCM_TAG = re.compile(r"\.rocm(\d)(\d)(\d)\b", re.I)  # vLLM local version tag, e.g. "+g71faa1880.rocm641"


def parse_software(text: str) -> dict:
    """Versions named in MLPerf's free-text Software field, e.g. 'TensorRT 10.11, CUDA 12.9'."""
    out = {}
    for name, pattern in _SOFTWARE.items():
        m = pattern.search(text or "")
        if m:
            out[name] = m.group(1)
    if "rocm" not in out:
        m = _ROCM_TAG.search(text or "")
        if m:
            out["rocm"] = ".".join(m.groups())
    return out


def _stack(versions: dict, text: str, vendor: str | None) -> str | None:
    low = (text or "").lower()
    if "rocm" in versions or "rocm" in low:
        return "rocm"
    if "cuda" in versions or "tensorrt" in low:
        return "cuda"
    # The software line often names only the serving engine; the part decides the stack.
    return {"AMD": "rocm", "NVIDIA": "cuda"}.get(vendor or "")
