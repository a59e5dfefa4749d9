"""Read an MLPerf Inference results summary (summary_results.json, any round) into reference rows.

One file is a JSON array of flat objects, one per result (system x model x scenario). The `ID`
names a system submission and repeats across its models and scenarios, so a row's ref_id is
source:ID/model/scenario; the bare ID is kept as `result_id` for citation.

Field names and types by round (every round is read by the one model below):
  v4.1        the names used since (ID, Submitter, Category, Suite, System, Model, Scenario,
              Accelerator, a#, Nodes, Performance_Result, Performance_Units, Software,
              weight_data_types, version); counts written as floats (a# 8.0,
              host_processor_core_count 32.0); IDs carry a 'v' ("v4.1-0001").
  v5.0-v5.1   the same names; counts as ints, '' where a field does not apply (a# of a CPU-only
              system); IDs without the 'v' ("5.1-0001"); version "v5.1".
  v3.x, v6.x  summaries built from the submission checker's CSV name the fields as the checker
              does (Organization, Division, SystemType, SystemName, MlperfModel, Result, Units,
              accelerator_model_name, accelerators_per_node, number_of_nodes, framework,
              "Public ID"); they are renamed to the names above. Where a file has both Model
              and MlperfModel, MlperfModel is the benchmark (Model is the model used).
  Optional everywhere: Availability, Suite, Software, weight_data_types, version, Location,
  Details, Platform. A missing round comes from the ID prefix, else from --round.

A row the model cannot read is listed with the reason and the rest are kept (`strict` refuses
the whole file instead). Counts must be whole and non-negative, results finite and
non-negative; text fields are bounded and free of control characters.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from gpuparity import validate
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
MAX_COUNT = 1_000_000          # accelerators per node or nodes: far above any real system
MAX_RESULT = 1e15

# Checker / older-round name -> the name used here. Applied only where the row lacks the newer name.
ALIASES = {
    "Public ID": "ID", "Organization": "Submitter", "Division": "Category", "SystemType": "Suite",
    "SystemName": "System", "accelerator_model_name": "Accelerator", "accelerators_per_node": "a#",
    "number_of_nodes": "Nodes", "Result": "Performance_Result", "Units": "Performance_Units",
    "framework": "Software",
}


# -- field types ------------------------------------------------------------------------------
def _show(value: Any) -> str:
    """A value quoted for an error line: repr escapes control characters; long values are cut."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _text(max_len: int):
    def check(value: Any) -> str:
        if isinstance(value, bool) or value is None:
            raise PydanticCustomError("text", "not text ({v})", {"v": _show(value)})
        if isinstance(value, (int, float)):   # a system named 8 is still a name
            value = repr(value) if isinstance(value, float) else str(value)
        if not isinstance(value, str):
            raise PydanticCustomError("text", "not text ({v})", {"v": _show(value)})
        if len(value) > max_len:
            raise PydanticCustomError("text", "longer than {n} characters", {"n": max_len})
        if validate._BAD_CHARS.search(value):
            raise PydanticCustomError("text", "holds control characters")
        return value.strip()
    return BeforeValidator(check)


def _count(value: Any) -> int:
    """A whole number >= 0 given as int, integral float (8.0) or digits ('8', '8.0'); '' is 0."""
    if value is None or (isinstance(value, str) and value.strip() == ""):
        return 0
    if isinstance(value, bool):
        raise PydanticCustomError("count", "not a whole number ({v})", {"v": _show(value)})
    number: float | int
    if isinstance(value, int):
        number = value
    elif isinstance(value, float):
        number = value
    elif isinstance(value, str) and len(value) <= 20 and re.fullmatch(r"\s*-?\d+(\.0*)?\s*", value):
        number = float(value) if "." in value else int(value)
    else:
        raise PydanticCustomError("count", "not a whole number ({v})", {"v": _show(value)})
    if number != number or number in (float("inf"), float("-inf")) or number != int(number):
        raise PydanticCustomError("count", "not a whole number ({v})", {"v": _show(value)})
    if number < 0:
        raise PydanticCustomError("count", "negative ({v})", {"v": _show(value)})
    if number > MAX_COUNT:
        raise PydanticCustomError("count", "over {n}", {"n": MAX_COUNT})
    return int(number)


def _flag(value: Any) -> bool:
    """The summary's 0/1 flags (written 0, 1, 0.0, "1", true or left empty)."""
    if value in (None, ""):
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("0", "1", "true", "false", "yes", "no"):
        return value.strip().lower() in ("1", "true", "yes")
    raise PydanticCustomError("flag", "not a 0/1 flag ({v})", {"v": _show(value)})


def _figure(value: Any) -> float:
    """A finite result >= 0 (a number, or a number written as text)."""
    if isinstance(value, str) and len(value) <= 40:
        try:
            value = float(value.replace(",", ""))
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PydanticCustomError("figure", "not a number ({v})", {"v": _show(value)})
    try:
        number = float(value)
    except OverflowError:
        raise PydanticCustomError("figure", "out of range") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise PydanticCustomError("figure", "not a finite number ({v})", {"v": _show(value)})
    if number < 0:
        raise PydanticCustomError("figure", "negative ({v})", {"v": _show(value)})
    if number > MAX_RESULT:
        raise PydanticCustomError("figure", "implausibly large ({v})", {"v": _show(value)})
    return number


Name = Annotated[str, _text(300), Field(min_length=1)]
OptName = Annotated[str, _text(300)]
LongText = Annotated[str, _text(4000)]
Count = Annotated[int, BeforeValidator(_count)]
Figure = Annotated[float, BeforeValidator(_figure)]


class InferenceRecord(BaseModel):
    """One row of summary_results.json after renaming (see the module notes)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    ID: Name
    Submitter: Name
    Category: Name
    System: Name
    Model: Name
    Scenario: Name
    Performance_Result: Figure
    Performance_Units: Name
    accelerators_per_node: Count = Field(0, alias="a#")
    Nodes: Count
    Accelerator: OptName = ""
    Availability: OptName = ""
    Suite: OptName = ""
    Platform: OptName = ""
    Software: LongText = ""
    weight_data_types: OptName = ""
    version: OptName = ""
    Location: LongText = ""
    Details: LongText = ""
    inferred: Annotated[bool, BeforeValidator(lambda v: _flag(v))] = False


def _optional_empty(rec: dict) -> dict:
    """None where a field does not apply means the same as '' (older rounds write either)."""
    return {k: ("" if v is None and k not in ("Performance_Result",) else v) for k, v in rec.items()}


def normalise(rec: dict) -> dict:
    """Rename checker / older-round fields to the names above (the newer name wins when both exist)."""
    out = dict(rec)
    if "MlperfModel" in out:
        out["Model"] = out["MlperfModel"]
    for old, new in ALIASES.items():
        if old in out and new not in out:
            out[new] = out[old]
    return _optional_empty(out)


# -- rows ---------------------------------------------------------------------------------------
def load_file(path) -> list:
    """The JSON array in a .json or .json.gz file (bounded by the decompressed size)."""
    data = validate.load_json(str(path), what="MLPerf results summary")
    if not isinstance(data, list):
        raise UserError(f"{path}: not an MLPerf results summary (top level is not an array)")
    return data


_ROUND = re.compile(r"v?(\d{1,2}\.\d{1,2})\b")
_TARGET = re.compile(r"^(.*)-(99(?:\.9)?)$")


def round_of(version: str, result_id: str, fallback: str | None) -> str | None:
    for text in (version, result_id):
        m = _ROUND.match(text or "")
        if m:
            return m.group(1)
    return fallback


def parse_rows(records: list, *, round: str | None = None, strict: bool = False) -> tuple[list[dict], list[dict]]:
    """(rows, unreadable) for every record; unreadable entries are {'row', 'id', 'reason'} (1-based).

    strict: the first unreadable record raises UserError naming it (nothing is returned).
    """
    if round is not None and not re.fullmatch(r"v?\d{1,2}\.\d{1,2}", round):
        raise UserError(f"--round {_show(round)} is not a round such as 4.1 or v5.1")
    fallback = round.lstrip("v") if round else None
    rows, unreadable, seen = [], [], {}
    for index, rec in enumerate(records, start=1):
        try:
            row = parse_row(rec, index, fallback)
        except UserError as exc:
            problem = {"row": index, "id": _record_id(rec), "reason": str(exc).split(": ", 1)[-1]}
            if strict:
                raise UserError(f"{_where(problem)}: {problem['reason']}") from None
            unreadable.append(problem)
            continue
        if row["ref_id"] in seen:
            problem = {"row": index, "id": row["result_id"],
                       "reason": f"repeats row {seen[row['ref_id']]} (same ID, model and scenario)"}
            if strict:
                raise UserError(f"{_where(problem)}: {problem['reason']}")
            unreadable.append(problem)
            continue
        seen[row["ref_id"]] = index
        rows.append(row)
    mark_twins(rows)
    return rows, unreadable


def _record_id(rec) -> str | None:
    rid = rec.get("ID", rec.get("Public ID")) if isinstance(rec, dict) else None
    return rid if isinstance(rid, str) and len(rid) <= 40 and not validate._BAD_CHARS.search(rid) else None


def _where(problem: dict) -> str:
    return f"row {problem['row']}" + (f" (ID {problem['id']})" if problem.get("id") else "")


def parse_row(rec, index: int, fallback_round: str | None = None) -> dict:
    if not isinstance(rec, dict):
        raise UserError(f"row {index}: not an object")
    r = validate.parse(InferenceRecord, normalise(rec), f"row {index}")
    if r.Nodes < 1:
        raise UserError(f"row {index}: Nodes: less than 1 ({r.Nodes})")
    rnd = round_of(r.version, r.ID, fallback_round)
    if rnd is None:
        raise UserError(f"row {index}: no round (neither 'version' nor the ID names it; give --round)")
    accel = map_accelerator(r.Accelerator)
    category = r.Category.lower()
    units = r.Performance_Units
    total = r.accelerators_per_node * r.Nodes
    is_throughput = units.lower() in THROUGHPUT_UNITS   # latency units (ms) are never throughput
    per_accel = r.Performance_Result / total if is_throughput and total and not accel["mixed"] else None
    versions, version_notes = check_versions(parse_software(r.Software))
    precision = r.weight_data_types.lower()
    family = _TARGET.match(r.Model)
    return {
        "ref_id": f"{SOURCE}:{r.ID}/{r.Model}/{r.Scenario}",
        "source": SOURCE,
        "result_id": r.ID,
        "round": rnd,
        "submitter": r.Submitter,
        "system": r.System,
        "platform": r.Platform or None,
        "availability": r.Availability or None,
        "suite": r.Suite or None,
        "category": category,
        "division_rules": DIVISION_RULES.get(category, f"{category}: not comparable with other divisions"),
        "model": r.Model,
        "model_family": family.group(1) if family else r.Model,
        "accuracy_target": family.group(2) if family else None,
        "twin": None,
        "twin_same_result": False,
        "scenario": r.Scenario,
        "precision": None if precision in ("", "unset") else precision,
        "software": r.Software,
        "versions": versions,
        "version_notes": version_notes,
        "stack": _stack(versions, r.Software, accel["vendor"]),
        "accelerator": r.Accelerator or None,
        "accelerator_name": accel["name"],
        "spec_id": accel["spec_id"],
        "variant": accel["variant"],
        "base_spec_id": accel["base_spec_id"],
        "mixed_accelerators": accel["mixed"],
        "accelerators_per_node": r.accelerators_per_node,
        "nodes": r.Nodes,
        "accelerators": total,
        "result": r.Performance_Result,
        "units": units,
        "throughput": r.Performance_Result if is_throughput else None,
        "per_accelerator": per_accel,
        "per_accelerator_derived": per_accel is not None,
        # MLPerf's flag for a result inferred from another scenario's run (edge systems), not measured.
        "inferred": r.inferred,
        # Per-GPU aggregates take single-node, single-accelerator-type rows only.
        "per_gpu_eligible": per_accel is not None and r.Nodes == 1,
        "note": USAGE_NOTE if per_accel is not None else None,
        "location": r.Location or None,
        "details": r.Details or None,
    }


def mark_twins(rows: list[dict]) -> None:
    """Link the -99 and -99.9 rows of one submission and scenario (MLPerf's two accuracy targets).

    A system that meets the stricter target often submits the same run for both; such twins
    carry twin_same_result and count once wherever rows of a model family are counted.
    """
    by_key: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["accuracy_target"]:
            by_key.setdefault((r["result_id"], r["model_family"], r["scenario"]), []).append(r)
    for group in by_key.values():
        if len(group) == 2:
            a, b = group
            a["twin"], b["twin"] = b["ref_id"], a["ref_id"]
            a["twin_same_result"] = b["twin_same_result"] = a["result"] == b["result"]


def distinct(rows: list[dict]) -> list[dict]:
    """Rows with each same-result twin pair counted once (the -99.9 row stands for both)."""
    return [r for r in rows if not (r.get("twin_same_result") and r.get("accuracy_target") == "99")]


# -- accelerator names --------------------------------------------------------------------------
# MLPerf spells parts as "Virtualized NVIDIA H200-SXM-141GB", "AMD Instinct MI300X-NPS1-SPX-192GB-750W",
# "AMD Instinct MI325X 256GB HBM3E (x16), AMD Instinct MI300X 192GB HBM3 (x8)". Partition modes,
# power caps and "(xN)" counts say nothing about which part it is. Every pattern anchors a digit
# run at its start and bounds it, so a long run of digits is scanned once (no quadratic backtracking).
_NOISE = re.compile(r"\bvirtuali[sz]ed\b|\(x\d{1,6}\)|\bnps\d\b|\b[sdqc]px\b|\b\d{1,5}\s?w\b", re.I)
_MEMORY = re.compile(r"(?<!\d)(\d{1,4})\s?gb?\b", re.I)


def clean_accelerator(text: str) -> str:
    text = _NOISE.sub(" ", text.replace("-", " ").replace("_", " "))
    return " ".join(text.split())


@lru_cache(maxsize=4096)
def map_accelerator(text: str) -> dict:
    """{'name', 'spec_id', 'vendor', 'mixed', 'variant', 'base_spec_id'}; spec_id None when the part
    has no spec row. A product variant (custom thermal 'CTS', 'NVL' or 'PCIe' of an SXM part) is
    its own product: its spec_id is None and base_spec_id names the part it varies, so a
    comparison pools the two only when asked to."""
    none = {"name": None, "spec_id": None, "vendor": None, "mixed": False, "variant": None, "base_spec_id": None}
    parts = [clean_accelerator(p) for p in (text or "")[:300].split(",") if p.strip()]
    if not parts:
        return none
    mapped = [_spec_for(p) for p in parts]
    if len({((m[0] or m[1] or {}).get("id", p), m[2]) for m, p in zip(mapped, parts, strict=True)}) > 1:
        return {**none, "name": "; ".join(parts), "mixed": True}
    spec, base, variant = mapped[0]
    vendor = (spec or base or {}).get("vendor") or next((v for v in ("AMD", "NVIDIA", "Intel")
                                                         if v.lower() in text.lower()), None)
    return {"name": parts[0], "spec_id": spec["id"] if spec else None, "vendor": vendor, "mixed": False,
            "variant": variant, "base_spec_id": base["id"] if base else None}


_VARIANTS = {"cts": "CTS (custom thermal)", "nvl": "NVL", "pcie": "PCIe"}


def _spec_for(name: str) -> tuple[dict | None, dict | None, str | None]:
    """(spec, base spec of a variant, variant name): one of the first two is None."""
    from gpuparity.platform.specs import match_spec

    spec = match_spec(name)
    if not spec:
        return None, None, None
    low, product = name.lower(), spec["product"].lower()
    # "H200-NVL" is not the SXM part even though the chip is the same: other power, cooling and links.
    for key, label in _VARIANTS.items():
        if re.search(rf"\b{key}\b", low) and key not in product:
            return None, spec, label
    mem = _MEMORY.search(name)
    if mem and spec.get("memory_gb") and abs(int(mem.group(1)) - spec["memory_gb"]) > 0.1 * spec["memory_gb"]:
        return None, None, None
    return spec, None, None


# -- software stack -----------------------------------------------------------------------------
_VER = r"v?(\d{1,4}\.\d{1,4}(?:\.\d{1,6})?)"
_VER_LONG = r"v?(\d{1,4}(?:\.\d{1,6}){1,4}(?:\.?(?:dev|rc|a|b|post)\d{1,6})?)"
_SEP = r"[\s_-]{0,3}"
_SOFTWARE = {
    "rocm": re.compile(rf"\brocm{_SEP}{_VER}", re.I),
    "cuda": re.compile(rf"\bcuda{_SEP}{_VER}", re.I),
    "tensorrt_llm": re.compile(rf"\btensorrt{_SEP}llm{_SEP}{_VER}", re.I),
    "tensorrt": re.compile(rf"\btensorrt(?!{_SEP}llm){_SEP}{_VER}", re.I),
    "vllm": re.compile(rf"\bvllm{_SEP}{_VER_LONG}", re.I),
    "sglang": re.compile(rf"\bsglang{_SEP}{_VER_LONG}", re.I),
    # "NGC PyTorch 25.04" names the container release, not the PyTorch version.
    "pytorch": re.compile(rf"(?<!ngc )\bpytorch{_SEP}{_VER_LONG}", re.I),
}
_ROCM_TAG = re.compile(r"\.rocm(\d)(\d)(\d)\b", re.I)  # vLLM local version tag, e.g. "+g71faa1880.rocm641"


def parse_software(text: str) -> dict:
    """Versions named in MLPerf's free-text Software field, e.g. 'TensorRT 10.11, CUDA 12.9'."""
    text = (text or "")[:4000]
    out = {}
    for name, pattern in _SOFTWARE.items():
        m = pattern.search(text)
        if m:
            out[name] = m.group(1)
    if "rocm" not in out:
        m = _ROCM_TAG.search(text)
        if m:
            out["rocm"] = ".".join(m.groups())
    return out


# A "version" past these is a driver's, not the stack's (ROCm minors have stayed below 8 in every
# major; amdgpu driver versions read 6.8.5, 6.10.5, 6.12.12; CUDA toolkits are 1.x-13.x while
# NVIDIA drivers are 5xx.yy).
_NOT_A_RELEASE = {
    "rocm": lambda major, minor: minor >= 8,
    "cuda": lambda major, minor: major >= 30,
}


def check_versions(versions: dict) -> tuple[dict, list[str]]:
    """(versions, notes): a version no release of that stack has (a driver version written in the
    stack field, "ROCm 6.12.12") is dropped and named in a note instead of taken at face value."""
    out, notes = dict(versions), []
    for name, is_driver in _NOT_A_RELEASE.items():
        m = re.match(r"(\d{1,4})\.(\d{1,4})", out.get(name) or "")
        if m and is_driver(int(m.group(1)), int(m.group(2))):
            notes.append(f"{name} {out.pop(name)} in the software field is not a {name} release (likely a "
                         "driver version): the stack version is unknown")
    return out, notes


def _stack(versions: dict, text: str, vendor: str | None) -> str | None:
    low = (text or "").lower()
    if "rocm" in versions or "rocm" in low:
        return "rocm"
    if "cuda" in versions or "tensorrt" in low:
        return "cuda"
    # The software line often names only the serving engine; the part decides the stack.
    return {"AMD": "rocm", "NVIDIA": "cuda"}.get(vendor or "")
