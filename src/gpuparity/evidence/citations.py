"""How a verdict names a third-party row: its URL (MLCommons' Details page, the results folder in the
round's repository, InferenceX's run), its software stack, its accelerator count and, for training,
the spread of its runs, beside its figure. One place, for every command that cites a row."""

from __future__ import annotations

import re

_URL = re.compile(r"https?://[^\s;,)]+")
INFERENCE_REPO = "https://github.com/mlcommons/inference_results_v{r}/tree/main/{path}"
TRAINING_REPO = "https://github.com/mlcommons/training_results_v{r}/tree/main/{path}"


def url_of(row: dict) -> str | None:
    """The page a reader checks a row on."""
    source = row.get("source")
    if source == "inferencex":
        return row.get("url") or row.get("result_id")
    details = str(row.get("details") or "")
    if details.startswith("https://"):
        return details
    location = str(row.get("folder") or row.get("location") or "").strip()
    if location.startswith("https://"):
        return location
    if not location or not row.get("round"):
        return None
    path = "/".join(p for p in location.replace("\\", "/").split("/") if p not in ("", "."))
    if source == "mlperf-training":
        return TRAINING_REPO.format(r=row["round"], path=path)
    # an inference Location names the run folder; its system's results folder is the Details page
    parts = path.split("/")
    if len(parts) > 4 and parts[2] == "results":
        path = "/".join(parts[:4])
    return INFERENCE_REPO.format(r=row["round"], path=path)


def first_url(text: str | None) -> str | None:
    m = _URL.search(text or "")
    return m.group(0).rstrip(".") if m else None


def stack_of(row: dict) -> str:
    """'rocm 6.4.1, vllm 0.9.0.2' (the stack first), or what the row names."""
    versions = row.get("versions") or {}
    main = row.get("stack")
    parts = [f"{main} {versions[main]}" if main and versions.get(main) else (main or "")]
    parts += [f"{k} {v}" for k, v in versions.items() if k != main]
    text = ", ".join(p for p in parts if p)
    return text or str(row.get("software") or "-")[:120]


def run_spread(row: dict) -> tuple[float, float] | None:
    """(fastest, slowest) converged run of a training row, in minutes."""
    minutes = [r["minutes"] for r in row.get("runs") or [] if isinstance(r, dict) and r.get("valid")
               and isinstance(r.get("minutes"), (int, float))]
    return (min(minutes), max(minutes)) if minutes else None


def value_of(row: dict) -> tuple[float | None, str]:
    """(the figure a row is compared by, its units)."""
    from gpuparity.evidence import rules

    if row.get("source") == "mlperf-training":
        return row.get("time_to_train_min"), "minutes to train"
    if row.get("source") == "inferencex":
        return row.get("per_accelerator"), f"tokens/s per GPU at {row.get('interactivity') or 0:.1f} tok/s/user"
    if rules.is_latency_row(row):
        return row.get("result"), f"{row.get('units')} (whole system, lower is better)"
    return row.get("per_accelerator"), f"{row.get('units')} per accelerator (derived)"


def cite(row: dict, side: str | None = None) -> dict:
    """The fields a verdict names a row by, the most telling first (a report shows the first few)."""
    value, units = value_of(row)
    out = {"side": side} if side else {}
    out.update({k: row.get(k) for k in ("source", "round", "result_id", "submitter", "model", "scenario")})
    out.update(value=value, units=units, url=url_of(row), stack=stack_of(row), accelerators=row.get("accelerators"),
               nodes=row.get("nodes"))
    spread = run_spread(row)
    if spread:
        out["runs_min"] = list(spread)
    if row.get("source") == "inferencex":
        out.update({k: row.get(k) for k in ("date", "framework", "spec_method", "image", "isl", "osl", "conc",
                                            "interactivity")})
        out["parallelism"] = row.get("system")
    out.update({k: row.get(k) for k in ("system", "spec_id", "ref_id", "category", "availability", "precision",
                                        "inferred")})
    return out
