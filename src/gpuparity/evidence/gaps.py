"""ROCm's gap to CUDA round by round, per like-for-like generation pair (evidence/parts): for each
pair, benchmark and scale the pair's ratio in every round both parts ran, under the comparison rules
(evidence/rules: closed division, available systems, one precision class and accelerator count, best
submission per side). Ratio = ROCm / CUDA speed: per-accelerator throughput, or CUDA's time to train
over ROCm's; 1 is parity, below 1 ROCm behind. Is the gap closing?"""

from __future__ import annotations

from gpuparity.evidence.citations import url_of
from gpuparity.evidence.parts import generation_pairs, pair_name
from gpuparity.evidence.rules import Rules, compare_groups


def _rank(rnd: str) -> tuple:
    return tuple(int(x) for x in str(rnd).split("."))


def generation_gaps(rows: list[dict], rules: Rules | None = None) -> list[dict]:
    """[{pair, cuda, rocm, about, lines: [{source, benchmark, scenario, precision, accelerators, units,
    points: [{round, ratio, rocm, cuda, rocm_url, cuda_url}]}]}], pairs with no evidence left out."""
    rules = rules or Rules()
    out = []
    for cuda, rocm, about in generation_pairs():
        result = compare_groups(rows, cuda, rocm, rules, "best")
        lines: dict[tuple, dict] = {}
        for g in result["groups"]:
            key = (g["source"], g["benchmark"], g["scenario"], g["precision"], g["accelerators"])
            best = {s: next(r for r in g["_rows"][s] if r["result_id"] == g[s]["best"]) for s in "ab"}
            line = lines.setdefault(key, {"source": g["source"], "benchmark": g["benchmark"],
                                          "scenario": None if g["source"] == "mlperf-training" else g["scenario"],
                                          "precision": g["precision"], "accelerators": g["accelerators"],
                                          "units": g["units"], "points": []})
            line["points"].append({"round": g["round"], "ratio": g["ratio"], "rocm": g["b"]["value"],
                                   "cuda": g["a"]["value"], "rocm_url": url_of(best["b"]),
                                   "cuda_url": url_of(best["a"])})
        for key in [k for k in lines if k[1].endswith("-99.9")]:
            same = lines.get((key[0], key[1][:-2], *key[2:]))
            if same and [p["ratio"] for p in same["points"]] == [p["ratio"] for p in lines[key]["points"]]:
                same["twin"] = key[1]
                del lines[key]          # one run submitted for both accuracy targets: shown once
        if lines:
            for line in lines.values():
                line["points"].sort(key=lambda p: _rank(p["round"]))
            out.append({"pair": pair_name(cuda, rocm), "cuda": cuda, "rocm": rocm, "about": about,
                        "lines": sorted(lines.values(), key=lambda x: (x["source"], x["benchmark"],
                                                                       str(x["scenario"]), str(x["precision"])))})
    return out
