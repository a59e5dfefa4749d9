"""Short names for results: what sets a row apart from the others in its table.

A table of one workload's results repeats most parameters (every GEMM row says layout=nn); the
reader needs the ones that vary. Shared by the report's charts and tables and the terminal's
compare/show tables, so every view names a result the same way. Plain text: callers escape.
"""

from __future__ import annotations


def params_text(params: dict | None) -> str:
    """Every parameter: 'm=512 n=512 k=512 layout=nn' (dtype has its own column)."""
    return " ".join(f"{k}={v}" for k, v in (params or {}).items() if k != "dtype")


def varying(rows: list[dict]) -> dict[str, set]:
    """Per workload, the parameter names (and 'dtype') whose values differ among its rows."""
    first: dict[str, dict] = {}
    out: dict[str, set] = {}
    for r in rows:
        w = r.get("workload") or "?"
        items = {**(r.get("params") or {}), "dtype": r.get("dtype")}
        seen = first.setdefault(w, items)
        out.setdefault(w, set()).update(k for k in set(seen) | set(items) if seen.get(k) != items.get(k))
    return out


def implied(rows: list[dict]) -> dict[str, set]:
    """Per workload, the varying parameters whose value the earlier ones (and the dtype, which
    has its own column) already fix among its rows: three conv rows of one layer that differ in
    pass or channels_last have that layer's cin, cout and hw because of its net, not apart."""
    vary = varying(rows)
    by_workload: dict[str, list[dict]] = {}
    for r in rows:
        by_workload.setdefault(r.get("workload") or "?", []).append({**(r.get("params") or {}), "dtype": r.get("dtype")})
    out: dict[str, set] = {}
    for w, items in by_workload.items():
        telling, out[w] = ["dtype"], set()
        for k in dict.fromkeys(k for p in items for k in p if k in vary[w] and k != "dtype"):
            seen: dict[tuple, object] = {}
            if all(seen.setdefault(tuple(repr(p.get(t)) for t in telling), p.get(k)) == p.get(k) for p in items):
                out[w].add(k)
            else:
                telling.append(k)
    return out


def case_texts(rows: list[dict]) -> list[str]:
    """Per row, the parameters that vary within its workload ('m=n=k=4096 scaling=row'), equal
    neighbouring values merged; '' where nothing varies. Those that tell rows apart come first and
    those they imply (`implied`) after, so a cell wrapped onto lines, or a label cut short, starts
    with what sets its row apart. dtype is left to its own column."""
    vary, late = varying(rows), implied(rows)
    out = []
    for r in rows:
        w = r.get("workload") or "?"
        groups: list[tuple[list, object]] = []
        for k, v in (r.get("params") or {}).items():
            if k not in vary[w] or k == "dtype":
                continue
            if groups and groups[-1][1] == v:
                groups[-1][0].append(k)
            else:
                groups.append(([k], v))
        groups.sort(key=lambda g: all(k in late[w] for k in g[0]))      # stable: each part keeps its order
        out.append(" ".join("=".join(ks) + f"={v}" for ks, v in groups))
    return out


def constant_params(rows: list[dict]) -> dict[str, dict]:
    """Per workload, the parameters every one of its rows shares (what a short label leaves out)."""
    vary = varying(rows)
    out: dict[str, dict] = {}
    for r in rows:
        w = r.get("workload") or "?"
        if w not in out:
            out[w] = {k: v for k, v in (r.get("params") or {}).items() if k not in vary[w] and k != "dtype"}
    return out


def short_labels(rows: list[dict]) -> list[str]:
    """'gemm m=n=k=4096 bf16': the workload, the varying parameters and the dtype where it varies;
    a label that would still repeat is numbered (#1, #2)."""
    vary = varying(rows)
    labels = []
    for r, case in zip(rows, case_texts(rows), strict=True):
        w = r.get("workload") or "?"
        parts = [w, case] if case else [w]
        if "dtype" in vary[w] and r.get("dtype"):
            parts.append(str(r["dtype"]))
        labels.append(" ".join(parts))
    counts: dict[str, int] = {}
    for lab in labels:
        counts[lab] = counts.get(lab, 0) + 1
    out, used = [], {}
    for lab in labels:
        if counts[lab] > 1:
            used[lab] = used.get(lab, 0) + 1
            lab = f"{lab} #{used[lab]}"
        out.append(lab)
    return out
