"""Plotly figures of the report. Every string from a run or the user goes through `t()`:
plotly renders a subset of HTML in labels, so text is entity-escaped and shows as typed."""

from __future__ import annotations

import html
import math

COLORS = {"A": "#d62728", "B": "#1f77b4"}
VERDICT_COLORS = {"faster": "#2ca02c", "parity": "#17becf", "slower": "#d62728", "inconclusive": "#bcbd22"}
DTYPE_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp6": 0.75, "fp4": 0.5}
MAX_BARS = 400


LEGEND_BELOW = {"orientation": "h", "yanchor": "top", "y": -0.25, "x": 0}


def t(text, limit: int = 90) -> str:
    """Escaped for plotly's HTML-like labels (it decodes &lt; &gt; &amp; back to text), shortened."""
    text = "" if text is None else str(text)
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return html.escape(text, quote=False)


def _params(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in (params or {}).items() if k != "dtype")


def _label(r: dict) -> str:
    return t(f"{r['workload']} {_params(r['params'])} {r.get('dtype') or ''}".strip())


def _peak_tflops(spec, dtype):
    from gpuparity.platform.specs import peak_tflops

    return peak_tflops(spec, dtype)


def _go():
    import plotly.graph_objects as go

    return go


def ratio_chart(result: dict):
    """B/A per result with its 95% CI, coloured by verdict, and the parity band."""
    go = _go()
    rows = result["rows"][:MAX_BARS]
    fig = go.Figure()
    for v, color in VERDICT_COLORS.items():
        sel = [r for r in rows if r["verdict"] == v]
        if not sel:
            continue
        fig.add_trace(go.Bar(
            x=[_label(r) for r in sel], y=[r["ratio"] for r in sel], name=v, marker_color=color,
            error_y={"type": "data", "symmetric": False,
                     "array": [(r["ci_high"] - r["ratio"]) if r["ci_high"] is not None else 0 for r in sel],
                     "arrayminus": [(r["ratio"] - r["ci_low"]) if r["ci_low"] is not None else 0 for r in sel]},
            hovertemplate="%{x}<br>B/A %{y:.3f}<extra>" + v + "</extra>"))
    tol = result["tolerance"]
    for y in (1 - tol, 1 + tol):
        fig.add_hline(y=y, line_dash="dot", line_color="grey")
    title = f"B / A per result (95% CI; dotted: parity band ±{tol:.0%})"
    if len(result["rows"]) > MAX_BARS:
        title += f"; first {MAX_BARS} of {len(result['rows'])}"
    fig.update_layout(title=t(title), yaxis_title="ratio B / A", barmode="group", xaxis_tickangle=-30,
                      height=480)
    return fig


def normalised_chart(result: dict):
    """Category geomeans raw, per spec peak, per $ and per W."""
    go = _go()
    fig = go.Figure()
    views = (("ratio", "raw"), ("ratio_per_peak", "per spec peak"), ("ratio_per_dollar", "per $ (GPU-hour)"),
             ("ratio_per_watt", "per watt"))
    cats = list(result["geomean"])
    for field, name in views:
        ys = [result["geomean"][c].get(field) for c in cats]
        lo = [result["geomean"][c].get(field.replace("ratio", "ci_low")) for c in cats]
        hi = [result["geomean"][c].get(field.replace("ratio", "ci_high")) for c in cats]
        fig.add_trace(go.Bar(
            x=[t(c) for c in cats], y=ys, name=name,
            error_y={"type": "data", "symmetric": False,
                     "array": [(h - y) if h is not None and y is not None else 0 for y, h in zip(ys, hi, strict=True)],
                     "arrayminus": [(y - lw) if lw is not None and y is not None else 0
                                    for y, lw in zip(ys, lo, strict=True)]},
            hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>"))
    fig.add_hline(y=1.0, line_color="grey")
    fig.update_layout(title="Geometric mean B / A per category: raw, per spec peak, per $, per W",
                      barmode="group", yaxis_title="ratio B / A", height=420)
    return fig


def _flop_bytes(r: dict) -> tuple[float | None, float | None, str]:
    """FLOP and bytes of one invocation; GEMM bytes default to the minimum traffic (A, B, C once)."""
    work = r.get("work") or {}
    flop, nbytes, basis = work.get("flop"), work.get("bytes"), "measured work"
    p = r.get("params") or {}
    if flop and not nbytes and all(k in p for k in ("m", "n", "k")) and r.get("dtype") in DTYPE_BYTES:
        nbytes = (p["m"] * p["k"] + p["k"] * p["n"] + p["m"] * p["n"]) * DTYPE_BYTES[r["dtype"]]
        basis = "minimum traffic m*k + k*n + m*n elements"
    return flop, nbytes, basis


def roofline_chart(sides: list[dict]):
    """Achieved TFLOP/s against arithmetic intensity, under each platform's spec roofs (dashed)
    and its measured bandwidth roof (dotted, best memory result)."""
    go = _go()
    fig = go.Figure()
    xs_all = []
    for side in sides:
        color = COLORS.get(side["label"], None)
        spec = side.get("spec") or {}
        pts, best_gbs = [], None
        for r in side["results"]:
            if r.get("status") != "ok":
                continue
            d = r.get("derived") or {}
            if d.get("gbs") and not d.get("tflops"):
                best_gbs = max(best_gbs or 0, d["gbs"])
            flop, nbytes, basis = _flop_bytes(r)
            if flop and nbytes and d.get("tflops"):
                pts.append((flop / nbytes, d["tflops"], _label(r), basis, d.get("pct_peak")))
        xs = [p[0] for p in pts]
        xs_all += xs
        if pts:
            fig.add_trace(go.Scatter(
                x=xs, y=[p[1] for p in pts], mode="markers", name=t(f"{side['name']} results"),
                marker={"color": color, "size": 9},
                text=[f"{p[2]}<br>{t(p[3])}<br>% peak {p[4]:.1f}" if p[4] else f"{p[2]}<br>{t(p[3])}" for p in pts],
                hovertemplate="%{text}<br>AI %{x:.1f} FLOP/B<br>%{y:.3g} TFLOP/s<extra></extra>"))
        side["_roof"] = (spec, best_gbs, color)
    lo, hi = (min(min(xs_all) / 4, 1.0), max(xs_all) * 4) if xs_all else (0.1, 1000.0)
    grid = [lo * (hi / lo) ** (i / 60) for i in range(61)]
    for side in sides:
        spec, best_gbs, color = side.pop("_roof")
        bw = (spec.get("memory_bw_tbs") or 0) * 1000
        dtypes = sorted({r.get("dtype") for r in side["results"] if r.get("status") == "ok"
                         and (r.get("derived") or {}).get("tflops") and r.get("dtype")})
        peaks = {dt: _peak_tflops(spec, dt) for dt in dtypes if _peak_tflops(spec, dt)}
        for dt, peak in peaks.items():
            ys = [min(peak, x * bw / 1000) if bw else peak for x in grid]
            fig.add_trace(go.Scatter(x=grid, y=ys, mode="lines", line={"dash": "dash", "color": color, "width": 1},
                                     name=t(f"{side['name']} spec roof {dt} ({peak:g} TFLOP/s)"),
                                     hovertemplate="spec roof %{y:.3g} TFLOP/s<extra></extra>"))
        if best_gbs:
            top = max(peaks.values(), default=math.inf)
            fig.add_trace(go.Scatter(x=grid, y=[min(top, x * best_gbs / 1000) for x in grid], mode="lines",
                                     line={"dash": "dot", "color": color, "width": 1},
                                     name=t(f"{side['name']} measured bandwidth ({best_gbs:.4g} GB/s)"),
                                     hovertemplate="measured bandwidth roof %{y:.3g} TFLOP/s<extra></extra>"))
    fig.update_layout(title="Roofline: achieved vs peak compute and bandwidth",
                      xaxis={"type": "log", "title": "arithmetic intensity (FLOP / byte)"},
                      yaxis={"type": "log", "title": "TFLOP/s"}, legend=LEGEND_BELOW, height=620)
    return fig


def gemm_chart(sides: list[dict]):
    """Best GEMM TFLOP/s per dtype per platform (hover: the shape and % of peak)."""
    go = _go()
    fig = go.Figure()
    for side in sides:
        best: dict[str, dict] = {}
        for r in side["results"]:
            d = r.get("derived") or {}
            if r.get("workload") == "gemm" and r.get("status") == "ok" and d.get("tflops"):
                dt = r.get("dtype") or "?"
                if dt not in best or d["tflops"] > best[dt]["derived"]["tflops"]:
                    best[dt] = r
        if not best:
            continue
        dts = sorted(best)
        fig.add_trace(go.Bar(
            x=[t(d) for d in dts], y=[best[d]["derived"]["tflops"] for d in dts], name=t(side["name"]),
            marker_color=COLORS.get(side["label"]),
            text=[_label(best[d]) + (f"<br>% peak {best[d]['derived']['pct_peak']:.1f}"
                                     if best[d]["derived"].get("pct_peak") else "") for d in dts],
            hovertemplate="%{text}<br>%{y:.4g} TFLOP/s<extra></extra>", textposition="none"))
    fig.update_layout(title="GEMM TFLOP/s by dtype (best shape)", barmode="group", yaxis_title="TFLOP/s",
                      height=460, legend=LEGEND_BELOW)
    return fig


def has_gemm(sides: list[dict]) -> bool:
    return any(r.get("workload") == "gemm" and (r.get("derived") or {}).get("tflops")
               for s in sides for r in s["results"])


def has_roofline(sides: list[dict]) -> bool:
    for s in sides:
        for r in s["results"]:
            flop, nbytes, _ = _flop_bytes(r)
            if r.get("status") == "ok" and flop and nbytes and (r.get("derived") or {}).get("tflops"):
                return True
    return False


def serving_chart(curves: list[tuple[str, str, dict]]):
    """Throughput per GPU against tokens/s per user: raw points and each side's Pareto curve."""
    go = _go()
    fig = go.Figure()
    for label, name, per_key in curves:
        color = COLORS.get(label)
        for ckey, c in per_key.items():
            fig.add_trace(go.Scatter(x=[p[0] for p in c["points"]], y=[p[1] for p in c["points"]], mode="markers",
                                     marker={"color": color, "size": 7, "opacity": 0.5},
                                     name=t(f"{name}: {ckey} points"),
                                     hovertemplate="%{x:.1f} tok/s/user<br>%{y:.4g} tok/s/GPU<extra></extra>"))
            fig.add_trace(go.Scatter(x=[p[0] for p in c["pareto"]], y=[p[1] for p in c["pareto"]],
                                     mode="lines+markers", line={"color": color}, name=t(f"{name}: {ckey} Pareto"),
                                     hovertemplate="%{x:.1f} tok/s/user<br>%{y:.4g} tok/s/GPU<extra></extra>"))
    fig.update_layout(title="Serving: throughput per GPU vs interactivity", height=560, legend=LEGEND_BELOW,
                      xaxis_title="interactivity (output tokens/s per user)", yaxis_title="output tokens/s per GPU")
    return fig


