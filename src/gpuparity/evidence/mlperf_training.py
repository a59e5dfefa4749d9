"""Read MLPerf Training results into reference rows, scored as MLPerf's result summarizer scores them.

Two inputs:
- A results tree as the mlcommons/training_results_vX.Y repositories lay it out:
  <submitter>/systems/<system>.json describes a system (accelerator, count, software stack) and
  <submitter>/results/<system>/<benchmark>/result_*.txt holds one training run each as ':::MLLOG {...}'
  lines (one JSON event per line). The path given may be the round's root, a submitter folder or
  its results/ folder.
- A submitter's summary JSON (summary.json, as mlperf_logging's result_summarizer writes it): one
  record per system with descriptor fields and one column per benchmark (minutes, or null).

Scoring, as mlperf_logging's result_summarizer does it (facts from mlcommons/logging; no code of it):
- Every file named result_*.txt in a benchmark folder is a run (submitters name them result_0.txt,
  result_<id>_01.txt, ...).
- A log is read as bytes: a byte that is not UTF-8 (progress bars print them) is replaced, never a
  reason to drop a run. Lines end at \n, \r or \r\n; only lines holding ':::MLLOG ' count, from the
  last such token on; everything else is ignored.
- A run's time to train is run_stop - run_start (time_ms, in minutes). A run did not converge, and
  is dropped, when its run_stop status is not 'success', when it does not have exactly one
  run_start and one run_stop (the compliance checker's rule), or when an MLLOG line is not JSON.
- The score is the olympic mean: the runs sorted, the fastest and the slowest dropped (4 and 4 for
  unet3d), where dropped runs count as the slowest; more dropped runs than that leave no score. A
  scaling.json beside the runs (a factor the review committee set) multiplies the score.
This is not MLPerf's compliance checker (hyperparameters and convergence points are not checked),
so cite the published results.
"""

from __future__ import annotations

import json
import os
import re
import statistics
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from gpuparity import validate
from gpuparity.errors import UserError
from gpuparity.evidence.accelerators import map_accelerator
from gpuparity.evidence.mlperf import Count, Figure, LongText, Name, OptName, _show
from gpuparity.evidence.software import _stack, check_versions, parse_software

SOURCE = "mlperf-training"
NOTE = ("MLPerf Training time to train (minutes, lower is better): the olympic mean of the runs times "
        "any scaling factor, computed by gpuparity from the logs; cite the MLPerf results table.")
# Runs each benchmark requires (the training rules' "Number of Runs", mlperf_logging's
# benchmark_meta): every benchmark of rounds v0.6-v5.1. llama31_405b follows gpt3 (3 runs, it
# replaced gpt3 in v5.0); llama31_8b (replaced bert) and flux1 (replaced stable_diffusion) take 10.
# A benchmark not in the table has an unknown count: its rows read complete None ("unknown").
REQUIRED_RUNS = {
    "bert": 10, "dlrm": 5, "dlrm_dcnv2": 10, "gnmt": 10, "gpt3": 3, "maskrcnn": 5, "minigo": 10,
    "resnet": 5, "ssd": 5, "retinanet": 5, "stable_diffusion": 10, "transformer": 10, "ncf": 10,
    "rnnt": 10, "unet3d": 40, "gnn": 10, "rgat": 10, "llama2_70b_lora": 10,
    "llama31_405b": 3, "llama31_8b": 10, "flux1": 10,
}
MAX_DROPPED = {"unet3d": 4}       # runs dropped at each end of the olympic mean (default 1)
TOKEN = ":::MLLOG "
MAX_LOG_BYTES = 64 * validate.MiB
MAX_SYSTEM_BYTES = validate.MiB
MAX_RESULT_FILES = 20_000
MAX_LINE = 1_000_000
USED_KEYS = ("run_start", "run_stop", "submission_benchmark")
_LINE_ENDS = re.compile(r"\r\n|\r|\n")          # universal newlines, as Python's text files read them
_ROUND_IN_PATH = re.compile(r"_v(\d{1,2}\.\d{1,2})(?:\b|/)")


# -- scoring --------------------------------------------------------------------------------------
def olympic_mean(minutes: list[float], dropped: int, max_dropped: int = 1) -> float | None:
    """Mean after dropping the max_dropped fastest and slowest runs; dropped (non-converged) runs
    already count as slowest. None when too many were dropped or nothing is left."""
    if dropped > max_dropped:
        return None
    kept = sorted(minutes)[max_dropped:len(minutes) - (max_dropped - dropped)]
    return sum(kept) / len(kept) if kept else None


class MllogEvent(BaseModel):
    model_config = ConfigDict(extra="ignore")

    key: Annotated[str, Field(max_length=200)]
    time_ms: Figure
    value: Any = None
    metadata: dict | None = None


def read_log(data: bytes) -> str:
    """A log's text: bytes that are not UTF-8 are replaced (they sit on progress-bar lines, not on
    MLLOG lines, and never cost a run)."""
    return data.decode("utf-8", errors="replace")


def parse_log(text: str) -> dict:
    """One run: {'start_ms', 'stop_ms', 'status', 'benchmark', 'minutes', 'valid', 'reason'}."""
    starts, stops = [], []
    status = benchmark = None
    for n, line in enumerate(_LINE_ENDS.split(text), start=1):
        at = line.rfind(TOKEN)              # from the last token on, as the summarizer reads a line
        if at < 0:
            continue
        body = line[at + len(TOKEN):].strip()
        if len(body) > MAX_LINE:
            return _run(None, None, None, None, f"line {n}: MLLOG line over {MAX_LINE} characters")
        try:
            data = json.loads(body)        # NaN in an event the score does not use is accepted, as there
        except (ValueError, RecursionError):
            return _run(None, None, None, None, f"line {n}: MLLOG line is not JSON (MLPerf drops the run)")
        try:
            if not isinstance(data, dict) or not isinstance(data.get("key"), str):
                raise UserError(f"line {n}: MLLOG event is not an object with a key")
            if data["key"] not in USED_KEYS:
                float(data.get("time_ms"))  # the summarizer reads every event's time
                continue
            event = validate.parse(MllogEvent, data, f"line {n}")
        except UserError as exc:
            return _run(None, None, None, None, f"unreadable MLLOG event ({str(exc)[:100]})")
        except (TypeError, ValueError, OverflowError):
            return _run(None, None, None, None, f"line {n}: an MLLOG event without a numeric time_ms")
        if event.key == "run_start":
            starts.append(event.time_ms)
        elif event.key == "run_stop":
            stops.append(event.time_ms)
            status = (event.metadata or {}).get("status")
            status = status if isinstance(status, str) and len(status) <= 40 else _show(status)
        elif event.key == "submission_benchmark" and isinstance(event.value, str):
            benchmark = event.value[:100]
    if len(starts) > 1 or len(stops) > 1:
        return _run(None, None, None, benchmark, f"{len(starts)} run_start and {len(stops)} run_stop events "
                    "(the compliance checker requires exactly one of each)")
    return _run(starts[0] if starts else None, stops[0] if stops else None, status, benchmark, None)


def _run(start, stop, status, benchmark, reason) -> dict:
    if reason is None:
        if start is None:
            reason = "no run_start"
        elif stop is None:
            reason = "no run_stop"
        elif stop <= start:
            reason = "run_stop is not after run_start"
        elif status != "success":
            reason = f"did not converge (run_stop status {_show(status)})"
    minutes = (stop - start) / 60_000 if reason is None else None
    return {"start_ms": start, "stop_ms": stop, "status": status, "benchmark": benchmark,
            "minutes": minutes, "valid": reason is None, "reason": reason}


def completeness(row: dict) -> str:
    """'complete', 'incomplete (N of R required runs)' or 'unknown' (no required count, or a summary row)."""
    if row.get("complete") is None:
        return "unknown"
    if row["complete"]:
        return "complete"
    total = (row.get("runs_valid") or 0) + (row.get("runs_dropped") or 0)
    return f"incomplete ({total} of {row.get('required_runs')} required runs)"


def score_runs(runs: list[dict], benchmark: str, scaling: float = 1.0) -> dict:
    """The benchmark's score fields from its runs (see the module notes)."""
    valid = [r["minutes"] for r in runs if r["valid"]]
    dropped = len(runs) - len(valid)
    max_dropped = MAX_DROPPED.get(benchmark, 1)
    mean = olympic_mean(valid, dropped, max_dropped)
    required = REQUIRED_RUNS.get(benchmark)
    return {
        "olympic_mean_min": mean,
        "scaling_factor": scaling,
        "time_to_train_min": mean * scaling if mean is not None else None,
        "runs_valid": len(valid),
        "runs_dropped": dropped,
        "runs_counted": max(len(valid) - max_dropped - (max_dropped - dropped), 0) if mean is not None else 0,
        "required_runs": required,
        # None: the rules' count for this benchmark is not known here, so neither is completeness.
        "complete": None if required is None else len(runs) == required,
        "median_run_min": statistics.median(valid) if valid else None,
    }


# -- system descriptions ----------------------------------------------------------------------------
def _software_text(value: Any) -> str:
    """framework / other_software_stack as one line: a dict's 'cuda_version: 12.8' reads 'cuda 12.8'."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ", ".join(_software_text(v) for v in value[:50])
    if isinstance(value, dict):
        return ", ".join(f"{str(k).removesuffix('_version')} {v}" for k, v in list(value.items())[:50]
                         if isinstance(v, (str, int, float)) and not isinstance(v, bool))
    return ""


SoftwareStack = Annotated[str, BeforeValidator(lambda v: _software_text(v)[:4000]), LongText]


class SystemDesc(BaseModel):
    """The fields of systems/<system>.json that a score needs (the rest is kept as written)."""

    model_config = ConfigDict(extra="ignore")

    submitter: OptName = ""
    division: OptName = ""
    status: OptName = ""
    system_name: OptName = ""
    number_of_nodes: Count
    accelerators_per_node: Count
    accelerator_model_name: OptName = ""
    framework: LongText = ""
    other_software_stack: SoftwareStack = ""


def training_row(*, rnd: str, submitter: str, system_id: str, benchmark: str, desc: SystemDesc,
                 score: dict, runs: list[dict] | None, origin: str, location: str | None,
                 result_id: str | None = None) -> dict:
    accel = map_accelerator(desc.accelerator_model_name)
    software = ", ".join(s for s in (desc.framework, desc.other_software_stack) if s)
    versions, version_notes = check_versions(parse_software(software))
    nodes, per_node = desc.number_of_nodes, desc.accelerators_per_node
    return {
        "ref_id": f"{SOURCE}:{rnd}/{submitter}/{system_id}/{benchmark}",
        "source": SOURCE,
        "round": rnd,
        # MLCommons assigns public result IDs in its results table, not in the tree: the
        # submitter/system path names the result there.
        "result_id": result_id or f"{submitter}/{system_id}",
        "submitter": submitter,
        "system": desc.system_name or system_id,
        "system_id": system_id,
        "category": desc.division.lower() or "closed",
        "availability": desc.status or None,
        "model": benchmark,
        "model_family": benchmark,
        "scenario": "time-to-train",
        "accelerator": desc.accelerator_model_name or None,
        "accelerator_name": accel["name"],
        "spec_id": accel["spec_id"],
        "mixed_accelerators": accel["mixed"],
        "accelerators_per_node": per_node,
        "nodes": nodes,
        "accelerators": per_node * nodes,
        "software": software,
        "versions": versions,
        "version_notes": version_notes,
        "stack": _stack(versions, software, accel["vendor"]),
        "variant": accel["variant"],
        "base_spec_id": accel["base_spec_id"],
        # MLPerf Training publishes no precision field: the closed division fixes the quality
        # target, and the number format is each submitter's choice among the approved ones.
        "precision": None,
        "result": score["time_to_train_min"],
        "units": "minutes",
        "lower_is_better": True,
        **score,
        "runs": runs,
        "notes": [f"{r['file']}: {r['note']}" for r in runs or [] if r.get("note")],
        "throughput": None,
        "per_accelerator": None,
        "per_gpu_eligible": False,
        "origin": origin,
        "location": location,
        "note": NOTE,
    }


# -- results trees ------------------------------------------------------------------------------------
def round_from_path(path: str, given: str | None) -> str:
    if given:
        if not re.fullmatch(r"v?\d{1,2}\.\d{1,2}", given):
            raise UserError(f"--round {_show(given)} is not a round such as 5.0 or v4.1")
        return given.lstrip("v")
    found = _round_in(str(Path(path).resolve()).replace(os.sep, "/") + "/")
    if not found:
        raise UserError(f"{path}: the round is not in the path (e.g. training_results_v5.0); give --round")
    return found


def _round_in(text: str) -> str | None:
    m = _ROUND_IN_PATH.search(text or "")
    return m.group(1) if m else None


def _dirs(path: Path) -> list[Path]:
    """Sub-folders (no symlinks followed, so a link loop cannot run the walk forever)."""
    try:
        with os.scandir(path) as it:
            return sorted(Path(e.path) for e in it if e.is_dir(follow_symlinks=False))
    except OSError as exc:
        raise UserError(f"{path}: cannot list ({exc.strerror or type(exc).__name__})") from None


def _is(path: Path, kind: str) -> bool:
    """is_dir / is_file that read an unreadable entry as absent instead of raising."""
    try:
        return path.is_dir() if kind == "dir" else path.is_file()
    except OSError:
        return False


def submitter_folders(path: Path) -> list[Path]:
    def is_submitter(p: Path) -> bool:
        return _is(p / "results", "dir") and _is(p / "systems", "dir")

    if path.name == "results" and is_submitter(path.parent):
        return [path.parent]
    if is_submitter(path):
        return [path]
    found = [p for p in _dirs(path) if is_submitter(p)]
    if not found:
        raise UserError(f"{path}: not an MLPerf Training results tree (expected <submitter>/systems/<system>.json "
                        "and <submitter>/results/<system>/<benchmark>/result_*.txt)")
    return found


def read_tree(path: str, rnd: str | None = None) -> tuple[list[dict], list[dict]]:
    """(rows, problems): a row per system and benchmark with a score; problems name what was left out."""
    root = Path(path)
    if not _is(root, "dir"):
        raise UserError(f"{path}: not a folder (give an MLPerf Training results tree or a summary .json)")
    submitters = submitter_folders(root)
    rnd = round_from_path(path, rnd)
    rows, problems, budget = [], [], [MAX_RESULT_FILES]
    for sub in submitters:
        for system_dir in _dirs(sub / "results"):
            where = f"{sub.name}/results/{system_dir.name}"
            try:
                desc = _system_desc(sub / "systems" / f"{system_dir.name}.json")
            except UserError as exc:
                problems.append({"where": where, "reason": str(exc).split(": ", 1)[-1]})
                continue
            submitter = desc.submitter or sub.name
            for bench_dir in _dirs(system_dir):
                row = _benchmark_row(bench_dir, rnd, submitter, system_dir.name, desc, budget, problems)
                if row:
                    rows.append(row)
    return rows, problems


def _system_desc(path: Path) -> SystemDesc:
    if not _is(path, "file"):
        raise UserError(f"{path}: no system description {path.parent.name}/{path.name}")
    data = validate.load_json(str(path), limit=MAX_SYSTEM_BYTES, what="system description")
    if not isinstance(data, dict):
        raise UserError(f"{path}: system description is not an object")
    return validate.parse(SystemDesc, data, f"{path.name}")


def is_result_file(name: str) -> bool:
    """A run log as the summarizer's glob result_*.txt finds it (any name between the two)."""
    return name.startswith("result_") and name.endswith(".txt") and len(name) <= 255


def _natural(path: Path) -> list:
    """result_2 before result_10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d{1,18})", path.name)]


def _benchmark_row(bench_dir: Path, rnd, submitter, system_id, desc, budget: list, problems) -> dict | None:
    benchmark = bench_dir.name
    where = f"{submitter}/results/{system_id}/{benchmark}"
    try:
        files = sorted((p for p in bench_dir.iterdir() if is_result_file(p.name)), key=_natural)
    except OSError as exc:
        problems.append({"where": where, "reason": f"cannot list ({exc.strerror or type(exc).__name__})"})
        return None
    odd = [f.name for f in files if not _is(f, "file")]   # a pipe or device would block or never end
    if odd:
        problems.append({"where": where, "reason": f"not regular files: {', '.join(odd[:5])}"})
        return None
    if not files:
        problems.append({"where": where, "reason": "no result_*.txt files"})
        return None
    budget[0] -= len(files)
    if budget[0] < 0:
        raise UserError(f"{where}: more than {MAX_RESULT_FILES} result files in this tree")
    runs = []
    for f in files:
        try:
            text = read_log(validate.read_bounded(str(f), MAX_LOG_BYTES, "result log"))
        except UserError as exc:
            run = _run(None, None, None, None, str(exc).split(": ", 1)[-1][:120])
        else:
            run = parse_log(text)
            if run["benchmark"] not in (None, benchmark):   # the summarizer scores it anyway: say so
                run["note"] = f"logs benchmark {_show(run['benchmark'])}, folder {benchmark}"
        runs.append({"file": f.name, **run})
    try:
        scaling = _scaling(bench_dir / "scaling.json")
    except UserError as exc:
        problems.append({"where": where, "reason": str(exc).split(": ", 1)[-1]})
        return None
    score = score_runs(runs, benchmark, scaling)
    if score["time_to_train_min"] is None:
        most = MAX_DROPPED.get(benchmark, 1)
        reason = (f"no score: {score['runs_dropped']} of {len(runs)} runs did not converge (at most {most} may be dropped)"
                  if score["runs_dropped"] > most else f"no score: {len(runs)} runs are too few for an olympic mean")
        problems.append({"where": where, "reason": reason})
        return None
    row = training_row(rnd=rnd, submitter=submitter, system_id=system_id, benchmark=benchmark, desc=desc,
                       score=score, runs=runs, origin="results tree", location=where)
    # the folder as the round's repository names it (a system's submitter may differ from its folder's)
    row["folder"] = "/".join(bench_dir.parts[-4:])
    return row


class Scaling(BaseModel):
    scaling_factor: Annotated[Figure, Field(gt=0, le=100)]


def _scaling(path: Path) -> float:
    if not _is(path, "file"):
        return 1.0
    data = validate.load_json(str(path), limit=MAX_SYSTEM_BYTES, what="scaling.json")
    return validate.parse(Scaling, data, "scaling.json").scaling_factor


# -- summary JSON -----------------------------------------------------------------------------------
DESCRIPTOR_FIELDS = {
    "division", "availability", "submitter", "system", "number_of_nodes", "host_processor_model_name",
    "host_processors_count", "accelerator_model_name", "accelerators_count", "framework", "notes",
    "details_url", "code_url", "ID", "Public ID", "id",
}


class SummaryRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    division: OptName = ""
    availability: OptName = ""
    submitter: Name
    system: Name
    number_of_nodes: Count
    accelerator_model_name: OptName = ""
    accelerators_count: Count
    framework: LongText = ""
    details_url: LongText = ""


def read_summary(path: str, rnd: str | None = None) -> tuple[list[dict], list[dict]]:
    """Rows from a submitter's summary JSON; the round from --round or the details_url."""
    data = validate.load_json(path, what="MLPerf Training summary")
    if not isinstance(data, list):
        raise UserError(f"{path}: not an MLPerf Training summary (top level is not an array)")
    rows, problems = [], []
    for index, rec in enumerate(data, start=1):
        where = f"record {index}"
        try:
            if not isinstance(rec, dict):
                raise UserError(f"{where}: not an object")
            r = validate.parse(SummaryRecord, rec, where)
            if r.number_of_nodes < 1 or r.accelerators_count % r.number_of_nodes:
                raise UserError(f"{where}: accelerators_count {r.accelerators_count} is not a multiple of "
                                f"number_of_nodes {r.number_of_nodes}")
            record_round = round_from_path(path, rnd) if rnd else _round_in(r.details_url)
            if record_round is None:
                raise UserError(f"{where}: the round is neither given (--round) nor in details_url")
        except UserError as exc:
            problems.append({"where": where, "reason": str(exc).split(": ", 1)[-1]})
            continue
        system_id = _system_id(r.details_url) or r.system
        desc = SystemDesc(submitter=r.submitter, division=r.division, status=r.availability,
                          system_name=r.system, number_of_nodes=r.number_of_nodes,
                          accelerators_per_node=r.accelerators_count // r.number_of_nodes,
                          accelerator_model_name=r.accelerator_model_name, framework=r.framework)
        for bench, value in (r.model_extra or {}).items():
            if bench in DESCRIPTOR_FIELDS or value is None:
                continue
            try:
                if not re.fullmatch(r"[a-z0-9_]{1,60}", bench):
                    raise UserError(f"{where}: {_show(bench)} is not a benchmark name")
                minutes = _minutes(value, f"{where}: {bench}")
            except UserError as exc:
                problems.append({"where": where, "reason": str(exc).split(": ", 1)[-1]})
                continue
            score = {"olympic_mean_min": None, "scaling_factor": None, "time_to_train_min": minutes,
                     "runs_valid": None, "runs_dropped": None, "runs_counted": None,
                     # a summary gives the score, not the runs it was scored from
                     "required_runs": REQUIRED_RUNS.get(bench), "complete": None, "median_run_min": None}
            rows.append(training_row(rnd=record_round, submitter=r.submitter, system_id=system_id,
                                     benchmark=bench, desc=desc, score=score, runs=None,
                                     origin="summary JSON", location=r.details_url or None))
    return rows, problems


class _Minutes(BaseModel):
    minutes: Annotated[Figure, Field(gt=0, le=1e7)]


def _minutes(value, where: str) -> float:
    return validate.parse(_Minutes, {"minutes": value}, where).minutes


def _system_id(url: str) -> str | None:
    m = re.search(r"/systems/([^/]{1,200})\.json$", url or "")
    return m.group(1) if m else None


def read(path: str, rnd: str | None = None) -> tuple[list[dict], list[dict]]:
    """A results tree (folder) or a summary JSON (file)."""
    return read_tree(path, rnd) if _is(Path(path), "dir") else read_summary(path, rnd)
