"""The run document's schema, checked with pydantic before a document from outside (an import, a
file named on the command line, a spooled or journalled run) is stored or shown.

What every view reads is typed here (ids, statuses, numbers that must be finite, the tables and
serving summaries that `show` and the report print); everything else a result carries is kept
as it is, within the bounds every string and container must respect (no NUL or other control
characters, which PostgreSQL's text cannot hold or terminals would obey; bounded lengths and
nesting). A document that passes can be stored, shown, compared, reported and exported.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9._:+_-]{0,127}$"     # no '/', '%', spaces (a file name, a LIKE pattern)
KEY = r"^[0-9a-f]{16}$"
MAX_STRING = 100_000
MAX_ITEMS = 5_000_000            # strings, numbers and containers in one document
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")     # C0 (but tab, newlines), DEL, C1
_SURROGATE = re.compile(r"[\ud800-\udfff]")     # a lone surrogate (JSON's "\ud800"): no UTF-8 text holds one
RESERVED_IDS = ("latest",)      # names the store resolves to another run (results.store.resolve_run_id)
INT64 = 2**63 - 1

Finite = Annotated[float, Field(allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Name = Annotated[str, Field(min_length=1, max_length=200)]


def _scalar(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, str)) or (isinstance(v, float) and math.isfinite(v)):
        return v
    raise ValueError("a parameter must be a number, a string, true/false or null")


Scalar = Annotated[Any, AfterValidator(_scalar)]
Status = Literal["ok", "skipped", "failed"]                       # results.schema.STATUSES
Category = Literal["kernel", "model", "serving", "comm"]          # results.schema.CATEGORIES


class Open(BaseModel):
    """Known fields typed, unknown ones kept (documents from newer versions still load)."""

    model_config = ConfigDict(extra="allow", strict=True)


class Metric(Open):
    name: Optional[Name] = None
    unit: Optional[Name] = None
    value: Optional[Positive] = None
    ci_low: Optional[Finite] = None
    ci_high: Optional[Finite] = None
    log_se: Optional[NonNegative] = None
    spread: Optional[NonNegative] = None
    trials: Optional[Annotated[int, Field(ge=0, le=100_000)]] = None
    samples: Optional[list[Finite]] = None


class Summary(Open):
    n: Annotated[int, Field(ge=0)] = 0
    median: Optional[Finite] = None
    ci_low: Optional[Finite] = None
    ci_high: Optional[Finite] = None
    rel_noise: Optional[NonNegative] = None


class Trial(Open):
    trial: Annotated[int, Field(ge=1, le=100_000)]
    status: Status = "ok"
    n: Annotated[int, Field(ge=0)] = 0
    value: Optional[Positive] = None
    log_se: Optional[NonNegative] = None
    flags: list[Name] = []


class Table(Open):
    title: Optional[Annotated[str, Field(max_length=1000)]] = None
    columns: list[Annotated[str, Field(max_length=1000)]] = []
    rows: list[list[Annotated[str, Field(max_length=10_000)]]] = []


class Info(Open):
    table: Optional[Table] = None
    curve_key: Optional[Annotated[str, Field(max_length=1000)]] = None
    peak_kind: Optional[Name] = None
    serving: Optional[dict[str, Any]] = None


class Derived(Open):
    tflops: Optional[Finite] = None
    gbs: Optional[Finite] = None
    tokens_per_s: Optional[Finite] = None
    pct_peak: Optional[Finite] = None
    interactivity: Optional[Finite] = None
    peak: Optional[dict[str, Any]] = None


class Telemetry(Open):
    valid: Optional[bool] = None
    mean_power_w: Optional[NonNegative] = None
    energy_j: Optional[Finite] = None


class Result(Open):
    """Every field a result of this tool has always written is required (views read them
    directly); `flags` and `trials` came with schema 2 and are optional."""

    workload: Name
    category: Optional[Category]
    params: dict[Annotated[str, Field(min_length=1, max_length=200)], Scalar]
    dtype: Optional[Name]
    key: Annotated[str, Field(pattern=KEY)]
    status: Status
    reason: Optional[Annotated[str, Field(max_length=10_000)]]
    samples: list[Finite]
    summary: Optional[Summary]
    work: dict[Name, NonNegative]
    metric: Optional[Metric]
    derived: Derived
    telemetry: Optional[Telemetry]
    flags: list[Name] = []
    trials: list[Trial] = []
    info: Info

    @model_validator(mode="after")
    def _ok_has_a_figure(self) -> "Result":
        if self.status == "ok" and self.metric is not None and self.metric.value is None and self.trials:
            raise ValueError("an ok result with trials needs metric.value")
        return self


class Slurm(Open):
    """The SLURM job of a run (platform/detect.slurm_job): `job` is what `list job=ID` selects."""

    job: Annotated[str, Field(pattern=r"^[0-9]{1,20}$")]
    job_id: Optional[Annotated[str, Field(pattern=r"^[0-9]{1,20}$")]] = None
    array_task_id: Optional[Annotated[int, Field(ge=0)]] = None
    node: Optional[Annotated[str, Field(max_length=1000)]] = None
    node_list: Optional[Annotated[str, Field(max_length=1000)]] = None


class Fingerprint(Open):
    host: Optional[Annotated[str, Field(max_length=1000)]] = None
    vendor: Optional[Annotated[str, Field(max_length=1000)]] = None
    product: Optional[Annotated[str, Field(max_length=1000)]] = None
    backend: Optional[Annotated[str, Field(max_length=100)]] = None
    spec: Optional[dict[str, Any]] = None
    torch_version: Optional[Annotated[str, Field(max_length=200)]] = None
    telemetry: Optional[dict[str, Any]] = None
    slurm: Optional[Slurm] = None           # a run of a SLURM job (gpuparity submit)


class Contention(Open):
    """Whether the machine was busy during the run (platform/machine.py): read by compare."""

    contended: bool = False
    reasons: list[Annotated[str, Field(max_length=1000)]] = []
    other_cpu_share: Optional[Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]] = None


class Machine(Open):
    contention: Optional[Contention] = None


class Run(Open):
    schema_version: Literal[1, 2]
    run_id: Annotated[str, Field(pattern=RUN_ID)]
    started_at: Annotated[str, Field(min_length=10, max_length=40)]
    finished_at: Optional[Annotated[str, Field(max_length=40)]]
    status: Literal["running", "complete", "interrupted", "crashed"]
    host: Optional[Annotated[str, Field(max_length=1000)]]
    spec_id: Optional[Annotated[str, Field(max_length=200)]] = None
    label: Optional[Annotated[str, Field(max_length=200)]] = None
    benchmark_version: Annotated[int, Field(ge=0)]
    fingerprint: Fingerprint
    results: list[Result]
    machine: Optional[Machine] = None       # state at start and end; older documents have none
    duration_s: Optional[NonNegative] = None

    @field_validator("run_id")
    @classmethod
    def _not_reserved(cls, v: str) -> str:
        if v.lower() in RESERVED_IDS:
            raise ValueError(f"'{v}' names the newest run in the store, not this one")
        return v

    @field_validator("started_at")
    @classmethod
    def _iso(cls, v: str) -> str:
        from datetime import datetime

        try:
            datetime.fromisoformat(v)
        except ValueError:
            raise ValueError("not an ISO date and time") from None
        return v

    @model_validator(mode="after")
    def _keys_unique(self) -> "Run":
        first: dict[str, int] = {}
        for i, r in enumerate(self.results):
            if first.setdefault(r.key, i) != i:     # the store holds one result per key and run
                raise ValueError(f"result {i} repeats the key of result {first[r.key]} ({r.workload})")
        return self


def check_bounds(doc: Any, origin: str) -> None:
    """Every string short and free of control characters, every number finite, nesting and size
    bounded: iteratively, so a hostile document cannot exhaust the stack."""
    from gpuparity.errors import UserError
    from gpuparity.validate import MAX_DEPTH

    stack: list[tuple[Any, int, str]] = [(doc, 1, "")]
    seen = 0
    while stack:
        node, depth, path = stack.pop()
        seen += 1
        if seen > MAX_ITEMS:
            raise UserError(f"{origin}: more than {MAX_ITEMS} values in one document")
        if isinstance(node, str):
            if len(node) > MAX_STRING:
                raise UserError(f"{origin}: {path or 'a string'} is longer than {MAX_STRING} characters")
            if _CONTROL.search(node):
                raise UserError(f"{origin}: {path or 'a string'} holds control characters (NUL, ESC, C1, ...)")
            if _SURROGATE.search(node):
                raise UserError(f"{origin}: {path or 'a string'} is not valid Unicode (a lone surrogate)")
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise UserError(f"{origin}: {path} is not a finite number")
        elif isinstance(node, (dict, list)):
            if depth > MAX_DEPTH:
                raise UserError(f"{origin}: nested deeper than {MAX_DEPTH} levels at {path}")
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for k, v in items:
                if isinstance(k, str) and (len(k) > 1000 or _CONTROL.search(k) or _SURROGATE.search(k)):
                    raise UserError(f"{origin}: a field name at {path or 'top level'} is too long or holds "
                                    "control characters or a lone surrogate")
                if type(v) is int and not -INT64 - 1 <= v <= INT64:    # SQLite, PostgreSQL, JSON readers: 64 bits
                    raise UserError(f"{origin}: {f'{path}.{k}' if path else k} is an integer beyond 64 bits")
                if isinstance(v, (dict, list, str, float)):
                    stack.append((v, depth + 1, f"{path}.{k}" if path else str(k)))


def validate_document(doc: Any, origin: str) -> dict:
    """Raise UserError (one line) unless doc is a run document this version can store and show."""
    from gpuparity.errors import UserError
    from gpuparity.validate import parse

    if not isinstance(doc, dict):
        raise UserError(f"{origin}: not a gpuparity run document (top level is not an object)")
    if "schema_version" not in doc:
        raise UserError(f"{origin}: not a gpuparity run document (no schema_version)")
    if doc.get("schema_version") not in (1, 2):
        raise UserError(f"{origin}: schema_version {str(doc.get('schema_version'))[:20]!r} is not supported "
                        "(expected 1 or 2)")
    check_bounds(doc, origin)
    parse(Run, doc, origin)
    return doc


# -- the one gate for a document from outside: its schema, then its figures recomputed -----------
def validate_run(doc: Any, origin: str = "document", recompute: bool = False) -> dict:
    """Raise UserError (one line) unless doc is a run document this version can store and show
    (the schema and bounds above) whose figures are what its samples give
    (results/recompute.py); recompute=True replaces disagreeing figures instead, flagged.
    One document at a time: a streaming reader calls it per document."""
    from gpuparity.results.recompute import recompute_run

    return recompute_run(validate_document(doc, origin), origin, fix=recompute)


def load_run_file(path: str, recompute: bool = False) -> dict:
    """Read (bounded by bytes read; gzip allowed; a regular file only) and validate an exported run."""
    from gpuparity.validate import load_json

    return validate_run(load_json(path, None, "run file"), path, recompute)
