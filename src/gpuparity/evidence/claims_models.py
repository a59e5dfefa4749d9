"""The claims file's schema (pydantic): every field typed and bounded, unknown claim fields refused.

Claim fields are described in the shipped claims file (data/rocm-vs-cuda-2025.yaml).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from gpuparity import validate

KINDS = ("mlperf", "mlperf-training", "mlperf-rounds", "inferencex", "spec", "price", "own-runs", "porting")
MAX_ITEMS = 1000


def _text(max_len: int, one_line: bool = False):
    def check(value: Any) -> str:
        if isinstance(value, bool) or value is None:
            raise PydanticCustomError("text", "must be text")
        if isinstance(value, int) and abs(value) < 10**18:
            value = str(value)                 # YAML reads `id: 1` as a number
        if not isinstance(value, str):
            raise PydanticCustomError("text", "must be text")
        if one_line and any(c in value for c in "\n\r\t"):
            raise PydanticCustomError("text", "must be one line")
        try:
            return validate.clean_text(value, "text", max_len)
        except ValueError as exc:
            raise PydanticCustomError("text", str(exc)) from None
    return BeforeValidator(check)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PydanticCustomError("number", "must be a number")
    try:
        number = float(value)
    except OverflowError:
        raise PydanticCustomError("number", "is out of range") from None
    if not math.isfinite(number) or not 0 <= number <= 1e9:
        raise PydanticCustomError("number", "must be a finite number in [0, 1e9]")
    return number


Short = Annotated[str, _text(200, one_line=True), Field(min_length=1)]
Long = Annotated[str, _text(validate.MAX_TEXT)]
Number = Annotated[float, BeforeValidator(_number)]


def _scalar(value: Any):
    """A parameter value: a bounded int, a finite float, a bool or short text (kept as given)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if abs(value) > 10**15:
            raise PydanticCustomError("number", "is out of range")
        return value
    if isinstance(value, float):
        if not math.isfinite(value) or abs(value) > 1e15:
            raise PydanticCustomError("number", "must be a finite number")
        return value
    return _text(500, one_line=True).func(value)


Scalar = Annotated[bool | int | float | str, BeforeValidator(_scalar)]
Strict = ConfigDict(extra="forbid")


class Side(BaseModel):
    model_config = Strict
    gpu: Short | None = None
    stack: Short | None = None
    label: Short | None = None


class Expected(BaseModel):
    """The claimed subject/baseline ratio: ratio, or min and/or max, or a direction."""

    model_config = Strict
    ratio: Number | None = None
    min: Number | None = None
    max: Number | None = None
    direction: Literal["higher", "lower", "parity"] | None = None

    @model_validator(mode="after")
    def _one(self):
        if self.ratio is None and self.min is None and self.max is None and self.direction is None:
            raise PydanticCustomError("expected", "needs ratio, min/max or direction")
        return self

    def bounds(self) -> tuple[float | None, float | None]:
        if self.ratio is not None:
            return self.ratio, self.ratio
        if self.direction is not None:
            return {"higher": (1.0, None), "lower": (None, 1.0), "parity": (1.0, 1.0)}[self.direction]
        return self.min, self.max


Round = Annotated[str, _text(10, one_line=True), Field(pattern=r"^v?\d{1,2}\.\d{1,2}$")]
Statistic = Literal["best", "median"]
Status = Literal["available", "preview", "rdi", "all"]      # evidence.rules.STATUSES


Stacks = Literal["claimed", "any"]


class MlperfSpec(BaseModel):
    """MLPerf Inference rows: one benchmark and scenario (none named: every one) of one division (and
    round), compared by evidence/rules: available systems (status), one precision class and accelerator
    count per check. stacks (mlperf-rounds): 'claimed' pairs rounds only where each side runs the
    claimed stack; 'any' follows each system over the rounds whatever its stack (shown beside it)."""

    model_config = Strict
    model: Short | None = None
    scenario: Short | None = None
    category: Literal["closed", "open", "network"] = "closed"
    status: Status = "available"
    precision: Short | None = None             # a class (fp8, fp4 = MXFP4/NVFP4); none: each class apart
    accelerators: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    round: Round | None = None
    rounds: Annotated[list[Round], Field(min_length=2, max_length=2)] | None = None  # [earlier, later]
    stacks: Stacks = "claimed"
    statistic: Statistic = "best"


class TrainingSpec(BaseModel):
    """MLPerf Training rows: one benchmark (none named: each) of one division (and round), at equal
    accelerator counts."""

    model_config = Strict
    benchmark: Short | None = None
    division: Literal["closed", "open"] = "closed"
    status: Status = "available"
    round: Round | None = None
    rounds: Annotated[list[Round], Field(min_length=2, max_length=2)] | None = None  # [earlier, later]
    stacks: Stacks = "claimed"
    accelerators: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    statistic: Statistic = "best"


class InferenceXSpec(BaseModel):
    """InferenceX rows of one model (and precision, sequence lengths): each GPU's best-throughput
    envelope over its configurations, read at equal interactivity at `levels` levels spread over the
    range both envelopes cover; speculative decoding (spec_method mtp) and none kept apart."""

    model_config = Strict
    model: Short
    precision: Short | None = None
    isl: Annotated[int, Field(ge=1, le=10_000_000)] | None = None
    osl: Annotated[int, Field(ge=1, le=10_000_000)] | None = None
    spec_method: Literal["none", "mtp", "each"] = "each"
    levels: Annotated[int, Field(ge=1, le=50)] = 6


class SpecCheck(BaseModel):
    model_config = Strict
    field: Short
    subject_bounds: Expected | None = None
    baseline_bounds: Expected | None = None


class PriceCheck(BaseModel):
    model_config = Strict
    bases: Annotated[list[Short], Field(max_length=MAX_ITEMS)] | None = None


class WorkloadFilter(BaseModel):
    model_config = Strict
    names: Annotated[list[Short], Field(max_length=MAX_ITEMS)] | None = None
    dtype: Short | None = None
    category: Short | None = None
    params: Annotated[dict[Short, Scalar], Field(max_length=MAX_ITEMS)] | None = None
    statistic: Literal["geomean", "best"] = "geomean"


class RunSpec(BaseModel):
    model_config = Strict
    workloads: Annotated[list[Short], Field(max_length=MAX_ITEMS)] = []
    suite: Short | None = None
    dtype: Short | None = None
    set: Annotated[dict[Short, Scalar], Field(max_length=MAX_ITEMS)] | None = None


Pair = Annotated[list[Short], Field(min_length=2, max_length=2)]     # [CUDA part, ROCm part]


class Claim(BaseModel):
    model_config = Strict
    id: Short
    text: Annotated[Long, Field(min_length=1)]
    source: Long | None = None
    kind: Annotated[list[Literal[KINDS]], BeforeValidator(lambda v: [v] if isinstance(v, str) else v),
                    Field(min_length=1, max_length=len(KINDS))]
    subject: Side | None = None
    baseline: Side | None = None
    expected: Expected
    tolerance: Annotated[Number, Field(lt=1)] = 0.05
    mlperf: MlperfSpec | None = None
    training: TrainingSpec | None = None
    inferencex: InferenceXSpec | None = None
    # CUDA vs ROCm in general: read on every like-for-like generation pair ('contemporary', the shipped
    # table) or on the [CUDA part, ROCm part] pairs given; subject and baseline then name a stack
    pairs: Literal["contemporary"] | Annotated[list[Pair], Field(min_length=1, max_length=50)] | None = None
    not_testable: Long | None = None   # a projection that no evidence can decide yet: why
    decide: Long | None = None         # the evidence that could decide it, in words
    spec: SpecCheck | None = None
    price: PriceCheck | None = None
    workload: WorkloadFilter | None = None
    run: RunSpec | None = None
    reasoning: Long | None = None      # what frames the verdict (domain facts), shown with it
    note: Long | None = None           # how the claim was encoded

    @property
    def kinds(self) -> list[str]:
        return list(dict.fromkeys(self.kind))

    @model_validator(mode="after")
    def _needs(self):
        kinds = self.kinds
        if "porting" not in kinds and not (self.subject and self.baseline):
            raise PydanticCustomError("claim", "fields 'subject' and 'baseline' are required")
        if self.pairs is not None:
            stacks = {(s.stack or "").split(" ")[0].lower() for s in (self.subject, self.baseline) if s}
            if stacks != {"cuda", "rocm"}:
                raise PydanticCustomError("claim", "'pairs' needs subject and baseline stacks cuda and rocm (one each)")
            if set(kinds) - {"mlperf", "mlperf-training", "inferencex"}:
                raise PydanticCustomError("claim", "'pairs' applies to kinds mlperf, mlperf-training and inferencex")
        needs_gpu = {"mlperf", "mlperf-training", "mlperf-rounds", "inferencex", "spec", "price"} & set(kinds)
        if needs_gpu and self.pairs is None and not self.not_testable and \
                not (self.subject and self.subject.gpu and self.baseline and self.baseline.gpu):
            raise PydanticCustomError("claim", "kind {k} needs 'gpu' in subject and baseline",
                                      {"k": "/".join(sorted(needs_gpu))})
        if "mlperf" in kinds and self.mlperf is None:
            raise PydanticCustomError("claim", "kind mlperf needs 'mlperf: {{model, scenario}}'")
        if "mlperf-rounds" in kinds and self.mlperf is None and self.training is None:
            raise PydanticCustomError("claim", "kind mlperf-rounds needs 'mlperf:' or 'training:' (rounds optional)")
        if "mlperf-training" in kinds and self.training is None:
            raise PydanticCustomError("claim", "kind mlperf-training needs 'training: {{benchmark}}'")
        if "inferencex" in kinds and self.inferencex is None:
            raise PydanticCustomError("claim", "kind inferencex needs 'inferencex: {{model}}'")
        if "spec" in kinds:
            from gpuparity.platform.specs import NUMERIC

            if self.spec is None or self.spec.field not in NUMERIC:
                raise PydanticCustomError("claim", "kind spec needs 'spec: {{field}}', one of {f}",
                                          {"f": ", ".join(NUMERIC)})
        return self


class ClaimsFile(BaseModel):
    model_config = ConfigDict(extra="ignore")
    version: int | None = None
    claims: Annotated[list[Any], Field(max_length=MAX_ITEMS)]
