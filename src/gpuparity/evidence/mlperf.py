"""Read an MLPerf Inference results summary (summary_results.json, any round) into reference rows.

A summary is a set of flat rows, one per result (system x model x scenario): a JSON array, or (v6.x,
as MLCommons publishes it) an object of rows keyed by index ("0" .. "491"). It is read by its
fields, not its wrapper. The `ID` names a system submission and repeats across its models and
scenarios, so a row's ref_id is source:ID/model/scenario; the bare ID is kept as `result_id` for
citation. A summary with no ID of any kind (v6.x) names each row by its `Location`, unique per
result ("./closed/AMD/results/8xMI350X_2xEPYC_9575F/dlrm-v3/Offline/performance/run_1"): ref_id
source:v6.1/closed/AMD/results/.../run_1, result_id the system's results folder in the round's
repository (v6.1/closed/AMD/results/8xMI350X_2xEPYC_9575F).

Field names and types by round (every round is read by the one model below):
  v4.1        the names used since (ID, Submitter, Category, Suite, System, Model, Scenario,
              Accelerator, a#, Nodes, Performance_Result, Performance_Units, Software,
              weight_data_types, version); counts written as floats (a# 8.0,
              host_processor_core_count 32.0); IDs carry a 'v' ("v4.1-0001").
  v5.0-v5.1   the same names; counts as ints, '' where a field does not apply (a# of a CPU-only
              system); IDs without the 'v' ("5.1-0001"); version "v5.1".
  v3.x, v6.x  summaries built from the submission checker's CSV name the fields as the checker
              does (Organization, Division, SystemType, SystemName, MlperfModel, Result, Units,
              accelerator_model_name, accelerators_per_node, number_of_nodes, total_accelerators,
              framework, "Public ID"); they are renamed to the names above. Of Model and
              MlperfModel, the benchmark is the one written as the checker writes benchmark names
              (lower case, digits, '-' and '.': "wan-2.2-t2v-a14b", "llama2-70b-99.9"), the more
              specific where both are (v3.x: Model "llama2-70b", MlperfModel "llama2-70b-99");
              a display label ("text_to_video", "VLM", "agentic edge") is kept beside it as
              `benchmark_label`. Scenarios written in lower case ("offline", "singlestream") are
              read as MLPerf names them.
  Optional everywhere: Availability, Suite, Software, weight_data_types, version, Location,
  Details, Platform, total_accelerators. A missing round comes from the ID prefix, else from --round.

A layout this does not know (no row has the fields a result needs, in either naming) is refused
whole, naming the fields it missed. A row the model cannot read is listed with the reason and the
rest are kept (`strict` refuses the whole file instead). Counts must be whole and non-negative,
results finite and non-negative; text fields are bounded and free of control characters.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from gpuparity import validate
from gpuparity.errors import UserError
from gpuparity.evidence.accelerators import clean_accelerator, map_accelerator
from gpuparity.evidence.software import _stack, check_versions, parse_software, rocm_line

# map_accelerator, clean_accelerator and parse_software stay importable from here (the importer's API).
__all__ = ["SOURCE", "check_versions", "clean_accelerator", "load_file", "map_accelerator", "parse_row", "parse_rows",
           "parse_software"]

SOURCE = "mlperf-inference"
USAGE_NOTE = (
    "Per-accelerator throughput is derived (result / total accelerators); it is not an MLPerf metric "
    "and is not verified by MLCommons. Cite the MLPerf result ID (where a round publishes none, its Location)."
)
DIVISION_RULES = {
    "closed": "closed: reference model, accuracy target and run rules fixed; comparable across submitters",
    "open": "open: model, precision or method may change; not comparable with closed results",
    "network": "network: served over a network; not comparable with closed or open results",
}
THROUGHPUT_UNITS = ("tokens/s", "samples/s", "queries/s", "tasks/s")
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

    ID: OptName = ""               # none in v6.x: the Location names the row
    Submitter: Name
    Category: Name
    System: Name
    Model: Name
    Scenario: Name
    Performance_Result: Figure
    Performance_Units: Name
    accelerators_per_node: Count = Field(0, alias="a#")
    Nodes: Count
    total_accelerators: Count = 0  # v6.x: 0 or absent where the file does not say
    Accelerator: OptName = ""
    Availability: OptName = ""
    Suite: OptName = ""
    Platform: OptName = ""
    Software: LongText = ""
    weight_data_types: OptName = ""
    version: OptName = ""
    Location: LongText = ""
    Details: LongText = ""
    benchmark_label: OptName = ""
    inferred: Annotated[bool, BeforeValidator(lambda v: _flag(v))] = False


# What a result needs, each as (the name used here, the checker's); ID or Location names the row.
REQUIRED = (("Submitter", "Organization"), ("Category", "Division"), ("System", "SystemName"), ("Model", "Model"),
            ("Scenario", "Scenario"), ("Performance_Result", "Result"), ("Performance_Units", "Units"),
            ("Nodes", "number_of_nodes"))
SCENARIOS = {s.lower(): s for s in ("Offline", "Server", "Interactive", "SingleStream", "MultiStream")}
_CHECKER_NAME = re.compile(r"[a-z0-9][a-z0-9.\-]{0,199}")


def _optional_empty(rec: dict) -> dict:
    """None where a field does not apply means the same as '' (older rounds write either)."""
    return {k: ("" if v is None and k not in ("Performance_Result",) else v) for k, v in rec.items()}


def benchmark_names(model: Any, mlperf_model: Any) -> tuple[Any, str]:
    """(benchmark, display label or '') of a row's Model and MlperfModel (see the module notes)."""
    if not isinstance(model, str) or not isinstance(mlperf_model, str) or not model.strip():
        return mlperf_model, ""
    m, mm = model.strip(), mlperf_model.strip()
    m_checker, mm_checker = bool(_CHECKER_NAME.fullmatch(m)), bool(_CHECKER_NAME.fullmatch(mm))
    if m == mm or (m_checker and not mm_checker):
        return model, "" if m == mm else mlperf_model
    if m_checker and mm_checker and m.startswith(mm + "-"):
        return model, ""                   # Model names the accuracy target MlperfModel leaves out
    return mlperf_model, ""


def normalise(rec: dict) -> dict:
    """Rename checker / older-round fields to the names above (the newer name wins when both exist)."""
    out = dict(rec)
    if "MlperfModel" in out:
        out["Model"], label = benchmark_names(out.get("Model"), out["MlperfModel"])
        if label:
            out["benchmark_label"] = label
    for old, new in ALIASES.items():
        if old in out and new not in out:
            out[new] = out[old]
    return _optional_empty(out)


# -- rows ---------------------------------------------------------------------------------------
def load_file(path) -> list | dict:
    """The rows in a .json or .json.gz file (bounded by the decompressed size): an array, or an
    object of rows (every value an object, or every key an index)."""
    data = validate.load_json(str(path), what="MLPerf results summary")
    if isinstance(data, list) or (isinstance(data, dict) and _object_of_rows(data)):
        return data
    raise UserError(f"{path}: not an MLPerf results summary (top level is not an array or an object of rows)")


def _object_of_rows(data: dict) -> bool:
    return all(isinstance(v, dict) for v in data.values()) or all(str(k).isdigit() for k in data)


def _entries(records: list | dict) -> list[tuple[str | None, Any]]:
    """(key, record) in file order; an object keyed by index is read in index order."""
    if isinstance(records, list):
        return [(None, r) for r in records]
    keys = list(records)
    if all(k.isdigit() and len(k) <= 9 for k in keys):
        keys.sort(key=int)
    return [(k, records[k]) for k in keys]


def check_layout(entries: list[tuple[str | None, Any]]) -> None:
    """Refuse a layout none of whose rows has a field a result needs (in either naming): never half-read."""
    seen: set = set()
    for _, rec in entries:
        if isinstance(rec, dict):
            seen.update(rec)
    if not seen:
        return                                     # no row is an object: each is listed as unreadable
    seen |= {new for old, new in ALIASES.items() if old in seen} | ({"Model"} if "MlperfModel" in seen else set())
    missed = [here if here == checker else f"{checker} (or {here})" for here, checker in REQUIRED if here not in seen]
    if not {"ID", "Location"} & seen:
        missed.append("ID or Location (to name each result by)")
    if missed:
        raise UserError("not an MLPerf Inference results summary: no row has " + ", ".join(missed)
                        + "; nothing was read")


_ROUND = re.compile(r"v?(\d{1,2}\.\d{1,2})\b")
_TARGET = re.compile(r"^(.*)-(99(?:\.9)?)$")


def round_of(version: str, result_id: str, fallback: str | None) -> str | None:
    for text in (version, result_id):
        m = _ROUND.match(text or "")
        if m:
            return m.group(1)
    return fallback


def parse_rows(records: list | dict, *, round: str | None = None, strict: bool = False
               ) -> tuple[list[dict], list[dict]]:
    """(rows, unreadable) for every record; unreadable entries are {'row', 'id', 'reason'} (1-based,
    in file order; 'key' too for an object of rows).

    strict: the first unreadable record raises UserError naming it (nothing is returned).
    """
    if round is not None and not re.fullmatch(r"v?\d{1,2}\.\d{1,2}", round):
        raise UserError(f"--round {_show(round)} is not a round such as 4.1 or v5.1")
    fallback = round.lstrip("v") if round else None
    entries = _entries(records)
    check_layout(entries)
    rows, unreadable, seen = [], [], {}
    for index, (key, rec) in enumerate(entries, start=1):
        where = {"row": index, **({"key": key} if key is not None else {})}
        try:
            row = parse_row(rec, index, fallback)
        except UserError as exc:
            problem = {**where, "id": _record_id(rec), "reason": str(exc).split(": ", 1)[-1]}
            if strict:
                raise UserError(f"{_where(problem)}: {problem['reason']}") from None
            unreadable.append(problem)
            continue
        if row["ref_id"] in seen:
            same = "same Location" if row["named_by"] == "Location" else "same ID, model and scenario"
            problem = {**where, "id": row["result_id"], "reason": f"repeats row {seen[row['ref_id']]} ({same})"}
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
    marks = [f"key {_show(problem['key'])}" if problem.get("key") is not None else "",
             f"ID {problem['id']}" if problem.get("id") else ""]
    return f"row {problem['row']}" + (f" ({', '.join(m for m in marks if m)})" if any(marks) else "")


def _location_ids(location: str, rnd: str) -> tuple[str, str]:
    """(result_id, ref_id) of a row named by its Location: the system's results folder
    ('v6.1/closed/AMD/results/8xMI350X_2xEPYC_9575F') and the whole path."""
    parts = [p for p in location.replace("\\", "/").split("/") if p not in ("", ".")]
    system = parts[:4] if len(parts) >= 4 and parts[2].lower() == "results" else parts
    return f"v{rnd}/{'/'.join(system)}", f"{SOURCE}:v{rnd}/{'/'.join(parts)}"


def _counts(r: InferenceRecord) -> tuple[int, int, str | None]:
    """(accelerators per node, total accelerators, a note where the file's counts disagree)."""
    per_node, total = r.accelerators_per_node, r.accelerators_per_node * r.Nodes
    if not r.total_accelerators or r.total_accelerators == total:
        return per_node, total, None
    if not total:                      # only the total given
        return (r.total_accelerators // r.Nodes if r.total_accelerators % r.Nodes == 0 else 0), \
            r.total_accelerators, None
    return per_node, r.total_accelerators, (
        f"total_accelerators {r.total_accelerators} is not accelerators_per_node x number_of_nodes "
        f"({per_node} x {r.Nodes}): the total is used, and the row has no per-GPU figure")


def parse_row(rec, index: int, fallback_round: str | None = None) -> dict:
    if not isinstance(rec, dict):
        raise UserError(f"row {index}: not an object")
    r = validate.parse(InferenceRecord, normalise(rec), f"row {index}")
    if r.Nodes < 1:
        raise UserError(f"row {index}: Nodes: less than 1 ({r.Nodes})")
    rnd = round_of(r.version, r.ID, fallback_round)
    if rnd is None:
        raise UserError(f"row {index}: no round (neither 'version' nor the ID names it; give --round)")
    scenario = SCENARIOS.get(re.sub(r"[\s_-]", "", r.Scenario.lower()), r.Scenario)
    if r.ID:
        result_id, ref_id, named_by = r.ID, f"{SOURCE}:{r.ID}/{r.Model}/{scenario}", "ID"
    elif r.Location:
        (result_id, ref_id), named_by = _location_ids(r.Location, rnd), "Location"
    else:
        raise UserError(f"row {index}: no ID and no Location to name the result by")
    accel = map_accelerator(r.Accelerator)
    category = r.Category.lower()
    units = r.Performance_Units
    per_node, total, count_note = _counts(r)
    is_throughput = units.lower() in THROUGHPUT_UNITS   # latency units (ms, s) are never throughput
    per_accel = r.Performance_Result / total if is_throughput and total and not accel["mixed"] else None
    versions, version_notes = check_versions(parse_software(r.Software))
    precision = r.weight_data_types.lower()
    family = _TARGET.match(r.Model)
    return {
        "ref_id": ref_id,
        "source": SOURCE,
        "result_id": result_id,
        "named_by": named_by,
        "round": rnd,
        "submitter": r.Submitter,
        "system": r.System,
        "platform": r.Platform or None,
        "availability": r.Availability or None,
        "suite": r.Suite or None,
        "category": category,
        "division_rules": DIVISION_RULES.get(category, f"{category}: not comparable with other divisions"),
        "model": r.Model,
        "benchmark_label": r.benchmark_label or None,
        "model_family": family.group(1) if family else r.Model,
        "accuracy_target": family.group(2) if family else None,
        "twin": None,
        "twin_same_result": False,
        "scenario": scenario,
        "precision": None if precision in ("", "unset") else precision,
        "software": r.Software,
        "versions": versions,
        "version_notes": version_notes,
        "rocm_line": rocm_line(versions.get("rocm")),
        "stack": _stack(versions, r.Software, accel["vendor"]),
        "accelerator": r.Accelerator or None,
        "accelerator_name": accel["name"],
        "spec_id": accel["spec_id"],
        "variant": accel["variant"],
        "base_spec_id": accel["base_spec_id"],
        "mixed_accelerators": accel["mixed"],
        "accelerators_per_node": per_node,
        "nodes": r.Nodes,
        "accelerators": total,
        "count_note": count_note,
        "result": r.Performance_Result,
        "units": units,
        "throughput": r.Performance_Result if is_throughput else None,
        "per_accelerator": per_accel,
        "per_accelerator_derived": per_accel is not None,
        # MLPerf's flag for a result inferred from another scenario's run (edge systems), not measured.
        "inferred": r.inferred,
        # Per-GPU aggregates take single-node, single-accelerator-type rows only.
        "per_gpu_eligible": per_accel is not None and r.Nodes == 1 and count_note is None,
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


