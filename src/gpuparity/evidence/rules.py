"""Which third-party rows may stand against each other: the comparison rules, written once.

`reference compare`, `reference list` and `claims check` take their rows through these functions,
so they cannot disagree about what compares with what. The rules (like for like, as an analyst
reads MLPerf):
  division   closed by default: open and network results may change the model, precision or
             method and never stand against closed ones (--division open | network | all).
  status     available systems by default: preview and research (RDI) systems are not products
             yet, and a row that names no availability is not known to be one (--status ... | all).
  precision  inference rows compare within one precision class (fp4 takes MXFP4, NVFP4 and E2M1,
             fp16 takes bf16, int8 takes uint8); the weight format decides the class, whatever
             the wording ("nvfp4, fp8 (kv cache)", "fp4 weights, fp8 KV cache" and "nvfp4 (E2M1
             ...)" are all fp4): a KV-cache precision is recorded beside it (kv_cache_precision),
             never a second class; a row that publishes no precision is left out
             (--precision any pools the classes and shows each side's; --precision fp8 picks one).
             MLPerf Training publishes no precision: its closed division fixes the quality target
             and leaves the number format to the submitter, so the rule does not apply there.
  scale      per-accelerator figures compare between systems with the same accelerator count
             (--scale any pools the counts and shows each side's beside the ratio); times to train
             and latencies always compare at equal counts.
  latency    a benchmark scored in latency (SingleStream, MultiStream: lower is better) compares
             system against system at equal accelerator counts, A's latency over B's; a mixed
             system never stands for either part.
  variants   custom-thermal (CTS), NVL and PCIe parts are their own products (--pool-variants counts
             them as the part they vary).
  distinct   one row per distinct run: one submitter's system with one benchmark, scenario and
             result under two result IDs counts once (the lowest ID stands, the others are named).
  rounds     never mixed, with one exception: every comparison stays within one round (a claim
             that names no round is checked in each round where both sides have rows), except
             evidence/series (`reference trend`, the `mlperf-rounds` claim kind), which on purpose
             follows the same system (submitter, system, accelerator count and nodes) across
             rounds, so that what changed is the software; every other rule holds there too
             (division, status, precision class, variants, distinct runs, units), and its rules
             line says so.
  units      each benchmark and scenario has one metric (LLMs in tokens/s; others Offline samples/s,
             Server queries/s; streams in a latency): a throughput row labelled otherwise is flagged
             and compared under the benchmark's metric (the label is wrong, not the figure). A
             latency's unit is believed as published where the round's submitters agree on it
             (text_to_video SingleStream is published in seconds); a row in a unit fewer submitters
             of that benchmark and scenario use is flagged, and s and ms rows never meet.
  inferred   MLPerf's "inferred" results (derived from another scenario's run) are kept and marked.
A ratio always reads B / A, the second side over the first as `gpuparity compare` reads it:
throughput B / A, time to train and latency A / B, so above 1 means B is faster.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from dataclasses import dataclass

from gpuparity.errors import UserError

TRAINING = "mlperf-training"
DIVISIONS = ("closed", "open", "network", "all")
STATUSES = ("available", "preview", "rdi", "all")
PRECISION_CLASSES = ("fp4", "fp6", "fp8", "fp16", "fp32", "int4", "int8")
_FORMATS = {  # a published number format -> its class
    "fp4": "fp4", "mxfp4": "fp4", "nvfp4": "fp4", "e2m1": "fp4", "e2m3": "fp6", "e3m2": "fp6", "fp6": "fp6", "mxfp6": "fp6", "fp8": "fp8", "mxfp8": "fp8",
    "e4m3": "fp8", "e5m2": "fp8", "e4m3fn": "fp8", "e4m3fnuz": "fp8", "e5m2fnuz": "fp8", "fp16": "fp16", "bf16": "fp16", "bfloat16": "fp16", "float16": "fp16",
    "fp32": "fp32", "tf32": "fp32", "float32": "fp32", "int4": "int4", "uint4": "int4", "int8": "int8",
    "uint8": "int8",
}
_TOKEN = re.compile(r"[a-z0-9]+")
_FORMAT_LIKE = re.compile(r"(u?int|fp|bf|mxfp|nvfp|float|e\dm\d)\d*[a-z]*")
_ITEMS = re.compile(r"[,;+/]|\band\b")
_PAREN = re.compile(r"\([^()]{0,500}\)")
_KV_WORDS = {"kv", "kvcache", "cache"}
_WEIGHT_WORDS = {"weight", "weights"}
_BESIDE_WORDS = {"activation", "activations", "scale", "scales", "scaling"}
_SCALE_FORMATS = {"e8m0", "ue8m0", "ue4m3"}     # MX / NVFP4 block-scale formats: never a class
LATENCY = "latency"                # the metric kind of SingleStream / MultiStream

# Benchmarks scored by generated tokens (their Offline, Server and Interactive figures are tokens/s).
TOKEN_BENCHMARKS = ("llama2-70b", "llama3.1-405b", "llama3.1-8b", "mixtral-8x7b", "deepseek-r1", "gpt-oss-120b")
# Benchmarks scored by samples (Offline samples/s, Server queries/s).
SAMPLE_BENCHMARKS = ("resnet", "resnet50", "retinanet", "bert", "3d-unet", "dlrm-v2", "dlrm", "stable-diffusion-xl",
                     "rgat", "whisper", "rnnt", "ssd-resnet34", "ssd-mobilenet", "pointpainting")


# -- the rules in force -------------------------------------------------------------------------
@dataclass(frozen=True)
class Rules:
    division: str = "closed"
    status: str = "available"
    precision: str = "same"          # same | any | a class (fp8)
    scale: str = "same"              # same | any
    pool_variants: bool = False

    @classmethod
    def make(cls, division: str | None = None, status: str | None = None, precision: str | None = None,
             scale: str | None = None, pool_variants: bool = False) -> Rules:
        """Rules from user options (None: the default), each checked: one-line error otherwise."""
        division = (division or "closed").lower()
        status = (status or "available").lower()
        if division not in DIVISIONS:
            raise UserError(f"--division {_show(division)}: choose {' | '.join(DIVISIONS)}")
        if status not in STATUSES:
            raise UserError(f"--status {_show(status)}: choose {' | '.join(STATUSES)}")
        wanted = (precision or "same").lower()
        if wanted not in ("same", "any"):
            wanted = precision_class(wanted) or ""
            if wanted not in PRECISION_CLASSES:
                raise UserError(f"--precision {_show(precision)}: choose same | any | {' | '.join(PRECISION_CLASSES)}")
        scale = (scale or "same").lower()
        if scale not in ("same", "any"):
            raise UserError(f"--scale {_show(scale)}: choose same | any")
        return cls(division, status, wanted, scale, bool(pool_variants))

    def header(self, rounds: tuple[str, ...] | None = None) -> str:
        """The rules in force, in one line (printed above every comparison); rounds: the rounds the
        same system is followed across (evidence/series: the one exception to one round at a time)."""
        parts = [
            "all divisions (never mixed)" if self.division == "all" else f"{self.division} division",
            "any availability" if self.status == "all" else f"{self.status} systems",
            {"same": "same precision class", "any": "any precision (shown per side)"}.get(
                self.precision, f"{self.precision} precision"),
            "same accelerator count" if self.scale == "same" else "any accelerator count (shown per side)",
            "variants pooled with their part" if self.pool_variants else "product variants (CTS, DLC, NVL, PCIe) apart",
            "one row per distinct run",
            (f"rounds {', '.join(rounds[:-1])} and {rounds[-1]} mixed on purpose: the same system in "
             f"{'both' if len(rounds) == 2 else 'each'} (submitter, system, accelerator count, nodes), so only its "
             "software changed" if rounds else "one round at a time"),
        ]
        return ", ".join(parts)

    def widen_hint(self, which: tuple = ("division", "status", "precision", "scale", "variants")) -> str:
        """The options that would widen the rules in force ('' when none would)."""
        hints = [h for k, h, on in (("division", "--division all", self.division != "all"),
                                    ("status", "--status all", self.status != "all"),
                                    ("precision", "--precision any", self.precision != "any"),
                                    ("scale", "--scale any", self.scale != "any"),
                                    ("variants", "--pool-variants", not self.pool_variants)) if on and k in which]
        return "widen with " + ", ".join(hints) if hints else ""


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# -- facts of one row ----------------------------------------------------------------------------
def status_class(availability: str | None) -> str:
    """available | preview | rdi | unknown, from MLPerf's wording ('Available on-premise', 'preview')."""
    low = (availability or "").strip().lower()
    if low.startswith("available"):
        return "available"
    if low.startswith("preview"):
        return "preview"
    if low.startswith(("rdi", "research")):
        return "rdi"
    return "unknown"


def precision_class(text: str | None) -> str | None:
    """The class of a published precision ('fp8', 'mxfp4' -> 'fp4', "{'unet': 'fp8', 'vae': 'fp32'}"
    -> 'fp32+fp8', "nvfp4, fp8 (kv cache)" -> 'fp4'); None when nothing is published ('', 'UNSET')
    or a format is not known."""
    return precision_parts(text)[0]


def precision_parts(text: str | None) -> tuple[str | None, str | None]:
    """(class of the weights, class of the KV cache) of a published precision.

    The text is read item by item (split at ',', ';', '+', '/', 'and'): an item naming the KV cache
    ('fp8 (kv cache)', 'fp8-kv') gives the KV-cache class; items naming weights, where any does,
    else every other item, give the class; a format of activations or block scales ('fp8
    activations', 'e8m0 scales') is beside it.
    A parenthesis describes the format before it ('nvfp4 (E2M1 ...)') unless it names the KV cache.
    """
    low = (text or "").lower()[:500]
    if any(t in _FORMATS for t in _TOKEN.findall(_PAREN.sub(" ", low))):
        low = _PAREN.sub(_parenthesis, low)
    weights, kv, plain = set(), set(), set()
    for item in _ITEMS.split(low):
        tokens = _TOKEN.findall(item)
        words = set(tokens)
        if any(t not in _FORMATS and t not in _SCALE_FORMATS for t in tokens if _FORMAT_LIKE.fullmatch(t)):
            return None, None                # fp64, int2, ...: a format this table does not class
        # a format just before 'scales' or 'activations' ('e4m3 block scales') is beside the class
        classes = {_FORMATS[t] for i, t in enumerate(tokens)
                   if t in _FORMATS and not _BESIDE_WORDS & set(tokens[i + 1:i + 3])}
        (kv if words & _KV_WORDS else weights if words & _WEIGHT_WORDS else plain).update(classes)
    chosen = weights or plain
    return ("+".join(sorted(chosen)) or None), ("+".join(sorted(kv)) or None)


def _parenthesis(m: re.Match) -> str:
    """A parenthesis after a format: gone (it describes the format), ' kv ' where it says the format
    before it is the KV cache's ('fp8 (kv cache)'), an item of its own where it names the KV cache's
    format ('nvfp4 (kv cache fp8)')."""
    inner = m.group(0)[1:-1]
    tokens = set(_TOKEN.findall(inner))
    if not tokens & _KV_WORDS:
        return " "
    return f" ; {inner} ; " if any(t in _FORMATS for t in tokens) else " kv "


def expected_units(model_family: str, scenario: str) -> str | None:
    """The metric MLPerf Inference scores a benchmark and scenario in ('latency': any time unit);
    None where not known."""
    family, scenario = (model_family or "").lower(), (scenario or "").lower()
    if scenario in ("singlestream", "multistream"):
        return LATENCY
    if any(family == b or family.startswith(b + "-") for b in TOKEN_BENCHMARKS):
        return "tokens/s" if scenario in ("offline", "server", "interactive") else None
    if any(family == b or family.startswith(b + "-") for b in SAMPLE_BENCHMARKS):
        return {"offline": "samples/s", "server": "queries/s"}.get(scenario)
    return None


def annotate(row: dict) -> dict:
    """The facts the rules read, derived from the row's own fields (so rows stored by any version
    read the same): status_class, precision_class, variant, base_spec_id, units_expected,
    units_flag, run_key. The accelerator mapping is redone from the name as published."""
    from gpuparity.evidence.accelerators import map_accelerator

    if row.get("accelerator"):
        accel = map_accelerator(str(row["accelerator"]))
        row.update(spec_id=accel["spec_id"], variant=accel["variant"], base_spec_id=accel["base_spec_id"])
    row.setdefault("variant", None)
    row.setdefault("base_spec_id", None)
    row["status_class"] = status_class(row.get("availability"))
    training = row.get("source") == TRAINING
    row["precision_class"], row["kv_cache_precision"] = (None, None) if training else \
        precision_parts(row.get("precision"))
    row.setdefault("inferred", False)
    units = str(row.get("units") or "")
    expected = None if training else expected_units(str(row.get("model_family") or row.get("model") or ""),
                                                   str(row.get("scenario") or ""))
    row["units_expected"] = expected
    row["units_flag"] = None
    if expected and not (is_latency_units(units) if expected == LATENCY else units.lower() == expected):
        row["units_flag"] = (f"labelled {units}, but MLPerf scores {row.get('model')} {row.get('scenario')} in "
                             f"{'a latency' if expected == LATENCY else expected}: the label is likely wrong")
    row["run_key"] = json.dumps([row.get("source"), row.get("round"), row.get("category"),
                                 str(row.get("submitter") or "").lower(), str(row.get("system") or "").lower(),
                                 row.get("accelerator") or "", row.get("accelerators"), row.get("nodes"),
                                 row.get("model"), row.get("scenario"), row.get("result")])
    return row


def is_latency_units(units) -> bool:
    return str(units or "").strip().lower().startswith("latency")


def is_latency_row(row: dict) -> bool:
    """An inference row scored in latency (lower is better): a whole-system figure, never per part."""
    return row.get("source") != TRAINING and row.get("throughput") is None and is_latency_units(row.get("units"))


def mark_latency_units(rows: list[dict]) -> list[dict]:
    """Flag latency rows whose time unit is not the one most submitters of that round, benchmark and
    scenario publish (a unit every submitter uses is believed as published); rows as given."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        if is_latency_row(r):
            groups.setdefault((r.get("source"), r.get("round"), r.get("model"), r.get("scenario")), []).append(r)
    for group in groups.values():
        by_unit: dict[str, set] = {}
        for r in group:
            by_unit.setdefault(str(r["units"]).strip().lower(), set()).add(str(r.get("submitter") or "").lower())
        if len(by_unit) < 2:
            continue
        ranked = sorted(by_unit.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        top, most = ranked[0][0], len(ranked[0][1])
        tie = sum(1 for _, who in ranked if len(who) == most) > 1
        everyone = len(set().union(*by_unit.values()))
        for r in group:
            if r.get("units_flag") or (not tie and str(r["units"]).strip().lower() == top):
                continue
            r["units_flag"] = (f"labelled {r['units']}, but submitters of {r.get('model')} {r.get('scenario')} in "
                               f"round {r.get('round')} disagree on the unit ("
                               + ", ".join(f"{len(who)} in {u}" for u, who in ranked) + ")" if tie else
                               f"labelled {r['units']}, but {most} of {everyone} submitters publish {r.get('model')} "
                               f"{r.get('scenario')} in round {r.get('round')} in {top}: the label is likely wrong")
    return rows


def metric_units(row: dict) -> str:
    """The units a row is compared in: the benchmark's metric where a throughput label is wrong."""
    units = str(row.get("units") or "")
    expected = row.get("units_expected")
    if expected and expected != LATENCY and units.lower().endswith("/s"):
        return {"tokens/s": "Tokens/s", "samples/s": "Samples/s", "queries/s": "Queries/s"}[expected]
    return units


# -- admitting rows ---------------------------------------------------------------------------------
def admit(rows: list[dict], rules: Rules) -> tuple[list[dict], Counter]:
    """(rows the division and status rules keep, what they left out by reason)."""
    kept, left = [], Counter()
    for r in rows:
        if rules.division != "all" and r.get("category") != rules.division:
            left[f"{r.get('category')} division"] += 1
        elif rules.status != "all" and r.get("status_class") != rules.status:
            left[f"{r.get('status_class')} availability"] += 1
        else:
            kept.append(r)
    return kept, left


def distinct(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """(one row per distinct run, the repeats): a repeat is the same run under another result ID;
    the row with the lowest ID stands and names the others in `also_ids`."""
    by_key: dict[str, list[dict]] = {}
    for r in rows:
        by_key.setdefault(r["run_key"], []).append(r)
    kept, repeats = [], []
    for group in by_key.values():
        group.sort(key=lambda r: (str(r.get("result_id")), r["ref_id"]))
        first = group[0]
        first["also_ids"] = [r["result_id"] for r in group[1:]]
        for r in group[1:]:
            r["duplicate_of"] = first["result_id"]
        kept.append(first)
        repeats += group[1:]
    return kept, repeats


def on_side(row: dict, spec_id: str, rules: Rules) -> bool:
    """The row is of this part: its spec, or (variants pooled) a variant of it."""
    if row.get("spec_id") == spec_id:
        return True
    return rules.pool_variants and row.get("base_spec_id") == spec_id


# -- comparing two parts -------------------------------------------------------------------------------
def aggregate(values: list[float], statistic: str, lower_is_better: bool) -> float:
    if statistic == "median":
        return statistics.median(values)
    return min(values) if lower_is_better else max(values)


def precision_key(row: dict, rules: Rules, left: Counter) -> str | None:
    """The precision class an inference row is grouped under ('any' when pooled), or None when the
    precision rule leaves it out (counted in left)."""
    precision = row.get("precision_class")
    if rules.precision == "any":
        return "any"
    if precision is None:
        left["no precision published"] += 1
        return None
    if rules.precision != "same" and precision != rules.precision:
        left[f"{precision} precision"] += 1
        return None
    return precision


def compare_groups(rows: list[dict], spec_a: str, spec_b: str, rules: Rules, statistic: str = "best",
                   side_filter=None) -> dict:
    """Per round, division, benchmark, scenario, precision class and scale: B / A.

    Inference compares derived per-accelerator throughput of single-node, one-accelerator-type
    rows, and latency (lower is better) system against system at equal accelerator counts;
    training compares time to train at equal accelerator counts. side_filter(side, row) narrows
    a side further (a claim's stack). Each group keeps its rows under '_rows' (dropped before
    printing)."""
    if statistic not in ("best", "median"):
        raise UserError(f"unknown statistic {_show(statistic)}; choose best or median")
    mine = []                         # rows of either part, each with the sides it stands on
    serving = sum(1 for r in rows if r.get("source") == "inferencex")
    rows = [r for r in rows if r.get("source") != "inferencex"]   # serving curves: evidence/inferencex_compare
    for r in rows:
        sides = [s for s, i in (("a", spec_a), ("b", spec_b))
                 if on_side(r, i, rules) and (side_filter is None or side_filter(s, r))]
        if sides and r.get("result") is not None:
            mine.append((r, sides))
    side_of = {id(r): sides for r, sides in mine}
    rows, left = admit([r for r, _ in mine], rules)
    if serving:
        left["InferenceX rows (serving curves, compared at equal interactivity by claims check)"] = serving
    rows, repeats = distinct(rows)
    groups: dict[tuple, dict[str, list]] = {}
    for r in rows:
        sides = side_of[id(r)]
        training = r.get("source") == TRAINING
        if training:
            if not r.get("time_to_train_min"):
                continue
            precision, scale = None, r.get("accelerators")
        elif is_latency_row(r):           # a whole system's latency: equal counts, never per part
            if not r.get("accelerators") or r.get("mixed_accelerators"):
                left["latency rows of no or mixed accelerators"] += 1
                continue
            precision = precision_key(r, rules, left)
            if precision is None:
                continue
            scale = r.get("accelerators")
        else:
            if not r.get("per_gpu_eligible") or r.get("per_accelerator") is None:
                left["multi-node or mixed rows (no per-accelerator figure)"] += 1
                continue
            precision = precision_key(r, rules, left)
            if precision is None:
                continue
            scale = r.get("accelerators") if rules.scale == "same" else None
        key = (r.get("source"), r.get("round") or "", r.get("category"), r.get("model"), r.get("scenario"),
               precision, scale, "minutes" if training else metric_units(r))
        if not r[_measure(key)[0]] > 0:       # a ratio needs a figure above zero on both sides
            left["results of zero"] += 1
            continue
        for side in sides:        # one part on both sides (two stacks of one GPU) is allowed
            groups.setdefault(key, {"a": [], "b": []})[side].append(r)
    out, unpaired = [], []
    for key in sorted(groups, key=lambda k: tuple("" if x is None else str(x) for x in k)):
        sides = groups[key]
        if sides["a"] and sides["b"]:
            out.append(_group(key, sides, spec_a, spec_b, statistic))
        else:
            side = "a" if sides["a"] else "b"
            field, lower = _measure(key)
            unpaired.append({"side": side, "round": key[1], "division": key[2], "benchmark": key[3],
                             "scenario": key[4], "precision": key[5], "accelerators": key[6],
                             "field": field, "lower_is_better": lower, "rows": len(sides[side]), "_rows": sides})
    return {"a": spec_a, "b": spec_b, "statistic": statistic, "rules": rules.header(), "groups": out,
            "only_a": sum(u["side"] == "a" for u in unpaired), "only_b": sum(u["side"] == "b" for u in unpaired),
            "unpaired": unpaired, "left_out": dict(left), "repeats": len(repeats)}


METRICS = {
    "time_to_train_min": "time to train, ratio A / B (higher: B faster)",
    "result": "system latency (lower is better), ratio A / B (higher: B faster)",
    "per_accelerator": "per-accelerator throughput (derived), ratio B / A",
}


def _measure(key: tuple) -> tuple[str, bool]:
    """(the row field a group compares, whether lower is better) from its key's source and units."""
    if key[0] == TRAINING:
        return "time_to_train_min", True
    return ("result", True) if is_latency_units(key[7]) else ("per_accelerator", False)


def _group(key: tuple, sides: dict, spec_a: str, spec_b: str, statistic: str) -> dict:
    source, rnd, division, model, scenario, precision, scale, units = key
    field, lower = _measure(key)
    values = {s: aggregate([r[field] for r in sides[s]], statistic, lower) for s in "ab"}
    ratio = values["a"] / values["b"] if lower else values["b"] / values["a"]
    best = {s: (min if lower else max)(sides[s], key=lambda r: r[field]) for s in "ab"}
    return {
        "source": source, "round": rnd, "division": division, "benchmark": model, "scenario": scenario,
        "precision": precision, "accelerators": scale, "statistic": statistic, "ratio": ratio,
        "metric": METRICS[field], "field": field, "lower_is_better": lower,
        "units": units,
        **{s: {"spec_id": spec, "value": values[s], "rows": len(sides[s]), "best": best[s]["result_id"],
               "submitter": best[s]["submitter"],
               "scale": sorted({r.get("accelerators") for r in sides[s]}),
               "precision": sorted({str(r.get("precision_class") or "-") for r in sides[s]}),
               "variants": sorted({r["variant"] for r in sides[s] if r.get("variant")}),
               "inferred": sum(1 for r in sides[s] if r.get("inferred")),
               "flags": sorted({f for r in sides[s] for f in [r.get("units_flag"), *(r.get("version_notes") or [])]
                                if f})}
           for s, spec in (("a", spec_a), ("b", spec_b))},
        "_rows": sides,
    }


def public(result: dict) -> dict:
    """A compare_groups result without the rows each group rests on (for printing)."""
    return {**result, **{part: [{k: v for k, v in g.items() if k != "_rows"} for g in result[part]]
                         for part in ("groups", "unpaired")}}
