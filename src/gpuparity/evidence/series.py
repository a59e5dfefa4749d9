"""Software over time on the same hardware: one submitter's system across rounds, each round's figure
with its software stack (`gpuparity reference trend`, the uplift claims and the report's trend chart).

This is the comparison rules' one exception to one round at a time (evidence/rules): the same system
in several rounds, so that what changed is the software. Rows pass the division and availability rules
and count once per distinct run; inference rows are whole-system throughput (the system, and so its
accelerator count, is the same in every round), within one precision class and metric; training rows
are times to train of one benchmark.

A series is one submitter's system on one part, accelerator count and node count. Systems are linked
across rounds by their system id (the results folder) or name, else, where the submitter ran exactly one
such system in each of two rounds and the two share a server model number, as that submitter's only
one, renamed (AMD's "MI300X_EPYC_9575F_pytorch", "Supermicro AS-8125GS-TNMR2", in Training v5.0 is
"MI300X_EPYC_9575F_pytorch_llama2_70b", "SMCI300X (AS -8125GS-TNMR2)", in v5.1; GigaComputing's G893
and G894 servers are two systems); how each link was made is recorded. A system with two results in one round (two stacks) keeps its best as
the round's point and names the other.
"""

from __future__ import annotations

import re

from gpuparity.evidence.rules import TRAINING, Rules, admit, distinct, metric_units, on_side, precision_key

# Submitters MLCommons renamed between rounds (one organisation, two spellings).
SUBMITTER_ALIASES = {"qct": "quanta cloud technology"}


def _submitter(name) -> str:
    low = " ".join(str(name or "").replace("_", " ").lower().split())
    return SUBMITTER_ALIASES.get(low, low)


def _names(row: dict) -> set[str]:
    return {" ".join(str(n).lower().split()) for n in (row.get("system_id"), row.get("system")) if n}


# not a server model: a part (mi300x, 8xmi325x, h200, gb200), a count (2xepyc), a memory size, a CPU
# model number (9575f, 8460y: shared by many servers)
_NOT_MODEL = re.compile(r"mi\d{3}|(?<![a-z])g?[hb]\d{3}|\d+gb|hbm|sxm|^\d+x|^\d{4}[a-z]$")


def _model_tokens(row: dict) -> set[str]:
    """The server's model numbers in its name or id ('8125gs', 'tnmr2', 'd74a'): letters and digits, four
    or more characters, not a part, count, memory size or CPU."""
    text = " ".join(str(row.get(k) or "") for k in ("system", "system_id")).lower()
    return {w for w in re.split(r"[^a-z0-9]+", text) if len(w) >= 4 and re.search(r"\d", w)
            and re.search(r"[a-z]", w) and not _NOT_MODEL.search(w)}


def _rank(rounds: set[str]) -> list[str]:
    return sorted(rounds, key=lambda r: tuple(int(x) for x in r.split(".")))


def figure(row: dict) -> float:
    """The figure a series follows: whole-system throughput, or time to train (minutes)."""
    return row["time_to_train_min"] if row.get("source") == TRAINING else row["result"]


def uplift(early: dict, late: dict) -> float:
    """Later over earlier, higher = the later software is faster (training: earlier time / later time)."""
    return figure(early) / figure(late) if late.get("source") == TRAINING else figure(late) / figure(early)


def stack_text(row: dict) -> str:
    versions = row.get("versions") or {}
    main = row.get("stack") or "unknown stack"
    parts = [f"{main} {versions[main]}" if versions.get(main) else main]
    parts += [f"{k} {v}" for k, v in versions.items() if k != main][:3]
    return ", ".join(parts)


def series(rows: list[dict], rules: Rules | None = None, *, part: str | None = None) -> list[dict]:
    """Every system's series (one point per round it appears in), most rounds first. part: a spec id."""
    rules = rules or Rules()
    mine = [r for r in rows if r.get("source") in ("mlperf-inference", TRAINING) and r.get("round")
            and (part is None or on_side(r, part, rules))]
    mine, left = admit(mine, rules)
    mine, _ = distinct(mine)
    groups: dict[tuple, list[dict]] = {}
    for r in mine:
        if not r.get("spec_id") and not (rules.pool_variants and r.get("base_spec_id")):
            continue
        training = r["source"] == TRAINING
        if training:
            if not r.get("time_to_train_min"):
                continue
            precision, units = None, "minutes to train"
        else:
            if r.get("throughput") is None or r.get("result") is None or r.get("mixed_accelerators"):
                continue
            precision = precision_key(r, rules, left)
            if precision is None:
                continue
            units = metric_units(r)
        part_id = r.get("spec_id") or r.get("base_spec_id")
        key = (r["source"], r.get("category"), r.get("model"), r.get("scenario"), precision, units, part_id,
               r.get("accelerators"), r.get("nodes"), _submitter(r.get("submitter")))
        groups.setdefault(key, []).append(r)
    out = []
    for key, members in groups.items():
        for thread in _threads(members):
            out.append(_series(key, thread))
    out.sort(key=lambda s: (-len(s["points"]), s["source"], s["benchmark"], s["scenario"] or "", s["part"],
                            s["submitter"].lower(), s["system"].lower()))
    return out


def _threads(rows: list[dict]) -> list[dict]:
    """Rows of one group (one submitter, part and scale) linked across rounds into systems."""
    by_round: dict[str, list[dict]] = {}
    for r in rows:
        by_round.setdefault(r["round"], []).append(r)
    threads: list[dict] = []            # {"points": {round: [rows]}, "links": [how each round joined]}
    prev = None
    for rnd in _rank(set(by_round)):
        for r in by_round[rnd]:
            t = next((t for t in threads if any(_names(r) & _names(x) for xs in t["points"].values() for x in xs)),
                     None)
            if t is None:
                threads.append({"points": {rnd: [r]}, "links": []})
                continue
            if rnd not in t["points"]:
                t["links"].append(f"{rnd}: same system")
            t["points"].setdefault(rnd, []).append(r)
        in_prev = [t for t in threads if prev in t["points"]]
        in_now = [t for t in threads if rnd in t["points"]]
        # the submitter's only such system in the last round and in this one, with a model number in
        # common: the same system, renamed
        if len(in_prev) == 1 and len(in_now) == 1 and list(in_now[0]["points"]) == [rnd] \
                and rnd not in in_prev[0]["points"] \
                and {w for r in in_prev[0]["points"][prev] for w in _model_tokens(r)} \
                & {w for r in in_now[0]["points"][rnd] for w in _model_tokens(r)}:
            in_prev[0]["points"][rnd] = in_now[0]["points"][rnd]
            in_prev[0]["links"].append(f"{rnd}: the submitter's only such system in {prev} and {rnd}, renamed")
            threads.remove(in_now[0])
        prev = rnd
    return threads


def _series(key: tuple, thread: dict) -> dict:
    source, division, benchmark, scenario, precision, units, part, accelerators, nodes, _ = key
    training = source == TRAINING
    points = []
    for rnd in _rank(set(thread["points"])):
        rows = sorted(thread["points"][rnd], key=figure, reverse=not training)
        best = rows[0]
        points.append({"round": rnd, "value": figure(best), "stack": stack_text(best), "row": best,
                       "also": [{"value": figure(r), "stack": stack_text(r), "result_id": r.get("result_id")}
                                for r in rows[1:]]})
    last = points[-1]["row"]
    return {"source": source, "division": division, "benchmark": benchmark,
            "scenario": None if training else scenario, "precision": precision, "units": units, "part": part,
            "accelerators": accelerators, "nodes": nodes, "submitter": last.get("submitter"),
            "system": last.get("system") or "", "links": thread["links"], "points": points,
            "uplift": uplift(points[0]["row"], last) if len(points) > 1 else None}


def public(items: list[dict]) -> list[dict]:
    """Series without the rows behind each point (for JSON), each point with its citation."""
    from gpuparity.evidence.citations import cite

    return [{**s, "points": [{**{k: v for k, v in p.items() if k != "row"}, "cited": cite(p["row"])}
                             for p in s["points"]]} for s in items]


def fold_twins(items: list[dict]) -> list[dict]:
    """A -99.9 series whose -99 twin has the same system, rounds and figures is shown once (MLPerf's
    two accuracy targets, one run submitted for both), the kept one naming its twin."""
    key = {(s["source"], s["benchmark"], s["scenario"], s["part"], s["accelerators"], s["submitter"], s["system"],
            tuple((p["round"], p["value"]) for p in s["points"])): s for s in items}
    out = []
    for s in items:
        if s["benchmark"].endswith("-99.9"):
            twin = key.get((s["source"], s["benchmark"][:-2], s["scenario"], s["part"], s["accelerators"],
                            s["submitter"], s["system"], tuple((p["round"], p["value"]) for p in s["points"])))
            if twin is not None:
                twin["twin"] = s["benchmark"]
                continue
        out.append(s)
    return out
