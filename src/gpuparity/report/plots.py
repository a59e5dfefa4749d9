"""Plotly figures of the report. Every string from a run or the user goes through `t()`:
plotly renders a subset of HTML in labels, so text is entity-escaped and shows as typed."""

from __future__ import annotations

import html
import math

COLORS = {"A": "#d62728", "B": "#1f77b4"}
TEXT_POSITION = {"A": "bottom center", "B": "top center"}     # point labels of the two sides apart
VERDICT_COLORS = {"faster": "#2ca02c", "parity": "#17becf", "slower": "#d62728", "inconclusive": "#bcbd22"}
DTYPE_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp6": 0.75, "fp4": 0.5}
MAX_FOREST = 120
MAX_POINT_LABELS = 16       # roofline points named on the chart (more: in the hover only)


LEGEND_BELOW = {"orientation": "h", "yanchor": "top", "y": -0.25, "x": 0}


def t(text, limit: int = 90) -> str:
    """Escaped for plotly's HTML-like labels (it decodes &lt; &gt; &amp; back to text), shortened."""
    text = "" if text is None else str(text)
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return html.escape(text, quote=False)


def bar_labels(texts: list[str], width: int = 44, lines: int = 3) -> list[str]:
    """Category labels of a bar chart: escaped, wrapped at spaces onto at most `lines` lines of about
    `width` characters, and never two alike (plotly draws bars of one category on top of each other:
    three conv cases cut at the same 60 characters once read as one bar)."""
    out = []
    for text in texts:
        rows, line = [], ""
        for word in str(text or "").split():
            if line and len(line) + 1 + len(word) > width:
                rows.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        rows.append(line)
        if len(rows) > lines:
            rest = " ".join(rows[lines - 1:])
            rows = rows[:lines - 1] + [rest[:width - 1] + "…" if len(rest) > width else rest]
        out.append("<br>".join(html.escape(r, quote=False) for r in rows))
    return numbered(out)


def numbered(labels: list[str]) -> list[str]:
    """Labels cut alike told apart: the second and later of a text get " (2)", " (3)", ... (a tick
    must name one row)."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(f"{label} ({seen[label]})" if seen[label] > 1 else label)
    return out


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


def _figure():
    """A figure on a white plot area (the parity band and the CIs stand out)."""
    return _go().Figure(layout={"template": "plotly_white"})


def short_labels(rows: list[dict], limit: int = 44) -> list[str]:
    """Labels that name a result by what sets it apart (report.labels), escaped and shortened;
    two cut alike are numbered (numbered)."""
    from gpuparity.report.labels import short_labels as plain

    out = [t(lab, limit) for lab in plain(rows)]
    return numbered(out)


RATIO_TICKS = (  # fine, 1-2-5, decades: the finest set that gives at most `most` ticks in range
    (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2, 3, 5, 10, 20, 50, 100),
    (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100),
    (0.001, 0.01, 0.1, 1, 10, 100, 1000),
)


def ratio_ticks(x0: float, x1: float, most: int = 9) -> list[float]:
    """Tick values inside the log10 range [x0, x1]."""
    for ticks in RATIO_TICKS:
        inside = [v for v in ticks if x0 <= math.log10(v) <= x1]
        if len(inside) <= most:
            return inside
    return inside


def _log_range(rows: list[dict], tol: float) -> tuple[float, float]:
    """x range (log10) covering the estimates, their CIs and the parity band; a CI is clipped to 3x
    beyond its estimate, so one wild interval runs off the edge rather than squash every other row."""
    from gpuparity.comparison.verdict import band

    xs = list(band(tol))        # the verdicts' band, symmetric on the log scale
    for r in rows:
        x = r["ratio"]
        xs += [x, max(r.get("ci_low") or x, x / 3), min(r.get("ci_high") or x, x * 3)]
    xs = [x for x in xs if x > 0]
    return math.log10(min(xs) / 1.15), math.log10(max(xs) * 1.15)


def _pick_rows(rows: list[dict], limit: int) -> list[dict]:
    """At most `limit` rows, the same share per category, keeping the largest differences."""
    if len(rows) <= limit:
        return rows
    cats: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        cats.setdefault(r.get("category") or "other", []).append(i)
    per = max(5, limit // len(cats))
    keep = set()
    for idx in cats.values():
        idx = sorted(idx, key=lambda i: -abs(math.log(rows[i]["ratio"])) if rows[i].get("ratio") else 0)
        keep.update(idx[:per])
    return [r for i, r in enumerate(rows) if i in keep]


def forest_chart(result: dict, limit: int = MAX_FOREST):
    """Per-result B/A with 95% CIs on a log axis, grouped by category under the category's
    geometric mean (diamond), coloured by verdict, over the shaded parity band."""
    go = _go()
    tol = result["tolerance"]
    rows = [r for r in result["rows"] if r.get("ratio")]
    shown = _pick_rows(rows, limit)
    cats = list(dict.fromkeys(r.get("category") or "other" for r in shown))
    labels = dict(zip(map(id, shown), short_labels(shown), strict=True))
    geo = result.get("geomean") or {}
    y_rows, y = [], 0                       # (y, label, row or geomean entry, is_geomean)
    ticks, texts = [], []
    for cat in cats:
        if cat in geo:
            g = geo[cat]
            y_rows.append((y, f"{cat}: geomean of {g['n']}", {**g, "category": cat}, True))
        else:
            y_rows.append((y, f"{cat}", None, True))
        ticks.append(y)
        texts.append(f"<b>{t(y_rows[-1][1])}</b>")
        y += 1
        for r in (r for r in shown if (r.get("category") or "other") == cat):
            y_rows.append((y, labels[id(r)], r, False))
            ticks.append(y)
            texts.append(labels[id(r)])
            y += 1
        y += 0.6                            # a gap between categories
    fig = _figure()
    in_legend = set()
    for is_geo in (False, True):              # results first: the legend shows their marker
        for v, color in VERDICT_COLORS.items():
            sel = [(yy, lab, r) for yy, lab, r, g in y_rows if g == is_geo and r and r.get("verdict") == v
                   and r.get("ratio")]
            if not sel:
                continue
            ratio = [r["ratio"] for _, _, r in sel]
            hi = [(r["ci_high"] - r["ratio"]) if r.get("ci_high") is not None else 0 for _, _, r in sel]
            lo = [(r["ratio"] - r["ci_low"]) if r.get("ci_low") is not None else 0 for _, _, r in sel]
            ci = [f"[{r['ci_low']:.3g}, {r['ci_high']:.3g}]" if r.get("ci_low") is not None else "no CI"
                  for _, _, r in sel]
            flags = [", ".join(r.get("flags") or []) for _, _, r in sel]
            fig.add_trace(go.Scatter(
                x=ratio, y=[yy for yy, _, _ in sel], mode="markers", name=v, legendgroup=v,
                showlegend=v not in in_legend,
                marker={"color": color, "size": 13 if is_geo else 8, "symbol": [
                    ("diamond" if is_geo else "circle") + ("-open" if f else "") for f in flags],
                        "line": {"width": 1, "color": "#333"} if is_geo else {"width": 1.5, "color": color}},
                error_x={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo, "color": color,
                         "thickness": 1.5, "width": 3},
                customdata=[[lab if not is_geo else t(lab), c, f] for (_, lab, _), c, f in zip(sel, ci, flags,
                                                                                              strict=True)],
                hovertemplate="%{customdata[0]}<br>B/A %{x:.3g} %{customdata[1]}<br>%{customdata[2]}<extra>"
                              + v + "</extra>"))
            in_legend.add(v)
    x0, x1 = _log_range([r for _, _, r, _ in y_rows if r and r.get("ratio")], tol)
    from gpuparity.comparison.verdict import band

    fig.add_vrect(x0=band(tol)[0], x1=band(tol)[1], fillcolor="#17becf", opacity=0.15, line_width=0, layer="below")
    fig.add_vline(x=1, line_color="#555", line_width=1)
    ticks_x = ratio_ticks(x0, x1)
    fig.update_layout(
        height=max(240, int(90 + 21 * y)), margin={"l": 10, "r": 20, "t": 30, "b": 50},
        meta={"shown": len(shown), "rows": len(rows)},
        xaxis={"type": "log", "range": [x0, x1], "tickvals": ticks_x, "ticktext": [f"{v:g}x" for v in ticks_x],
               "title": "ratio B / A (higher: B faster)", "zeroline": False},
        yaxis={"tickvals": ticks, "ticktext": texts, "autorange": "reversed", "automargin": True,
               "showgrid": False, "zeroline": False},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 1, "xanchor": "right"})
    return fig


NORMALISED_VIEWS = (("ratio", "raw"), ("ratio_per_peak", "per spec peak"), ("ratio_per_dollar", "per $ (GPU-hour)"),
                    ("ratio_per_watt", "per watt"))


def normalised_views(result: dict) -> list[tuple[str, str]]:
    """The views of the category geomeans that some category has (raw always)."""
    geo = result.get("geomean") or {}
    return [(f, name) for f, name in NORMALISED_VIEWS if f == "ratio" or any(g.get(f) for g in geo.values())]


def normalised_chart(result: dict):
    """Category geomeans raw and per spec peak, per $ and per W where known, on a log axis."""
    go = _go()
    fig = _figure()
    geo = result["geomean"]
    cats = list(geo)
    for field, name in normalised_views(result):
        ys = [geo[c].get(field) for c in cats]
        lo = [geo[c].get(field.replace("ratio", "ci_low")) for c in cats]
        hi = [geo[c].get(field.replace("ratio", "ci_high")) for c in cats]
        fig.add_trace(go.Bar(
            x=[t(c) for c in cats], y=ys, name=name,
            error_y={"type": "data", "symmetric": False,
                     "array": [(h - y) if h is not None and y is not None else 0 for y, h in zip(ys, hi, strict=True)],
                     "arrayminus": [(y - lw) if lw is not None and y is not None else 0
                                    for y, lw in zip(ys, lo, strict=True)]},
            hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>"))
    fig.add_hline(y=1.0, line_color="grey")
    fig.update_layout(barmode="group", yaxis={"title": "ratio B / A", "type": "log"}, height=400,
                      margin={"t": 30}, legend=LEGEND_BELOW)
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
    fig = _figure()
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
                pts.append((flop / nbytes, d["tflops"], r, basis, d.get("pct_peak")))
        xs = [p[0] for p in pts]
        xs_all += xs
        if pts:
            names = short_labels([p[2] for p in pts], limit=28)
            fig.add_trace(go.Scatter(
                x=xs, y=[p[1] for p in pts], mode="markers+text" if len(pts) <= MAX_POINT_LABELS else "markers",
                name=t(f"{side['short']} results"), marker={"color": color, "size": 9},
                text=names, textposition=TEXT_POSITION.get(side["label"], "top center"),
                textfont={"size": 10, "color": color},
                customdata=[f"{_label(p[2])}<br>{t(p[3])}" + (f"<br>% peak {p[4]:.1f}" if p[4] else "") for p in pts],
                hovertemplate="%{customdata}<br>AI %{x:.1f} FLOP/B<br>%{y:.3g} TFLOP/s<extra></extra>"))
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
                                     name=t(f"{side['short']} spec roof {dt} ({peak:g} TFLOP/s)"),
                                     hovertemplate="spec roof %{y:.3g} TFLOP/s<extra></extra>"))
        if best_gbs:
            top = max(peaks.values(), default=math.inf)
            fig.add_trace(go.Scatter(x=grid, y=[min(top, x * best_gbs / 1000) for x in grid], mode="lines",
                                     line={"dash": "dot", "color": color, "width": 1},
                                     name=t(f"{side['short']} measured bandwidth ({best_gbs:.4g} GB/s)"),
                                     hovertemplate="measured bandwidth roof %{y:.3g} TFLOP/s<extra></extra>"))
    fig.update_layout(margin={"t": 30}, xaxis={"type": "log", "title": "arithmetic intensity (FLOP / byte)"},
                      yaxis={"type": "log", "title": "TFLOP/s"}, legend=LEGEND_BELOW, height=620)
    return fig


def gemm_chart(sides: list[dict]):
    """Best GEMM TFLOP/s per dtype per platform (hover: the shape and % of peak)."""
    go = _go()
    fig = _figure()
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
            x=[t(d) for d in dts], y=[best[d]["derived"]["tflops"] for d in dts], name=t(side["short"]),
            marker_color=COLORS.get(side["label"]),
            text=[_label(best[d]) + (f"<br>% peak {best[d]['derived']['pct_peak']:.1f}"
                                     if best[d]["derived"].get("pct_peak") else "") for d in dts],
            hovertemplate="%{text}<br>%{y:.4g} TFLOP/s<extra></extra>", textposition="none"))
    fig.update_layout(margin={"t": 30}, barmode="group", yaxis_title="TFLOP/s",
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


MAX_CONFIG_LABELS = 24     # serving points named on a chart per side (more: in the hover only)
SERVING_FIGURES = {"total": ("total_per_gpu", "ci_total", "total (input + output) tokens/s"),
                   "output": ("output_per_gpu", "ci_output", "output tokens/s")}


def _error(points: list[dict], value: str, ci: str) -> dict | None:
    """Plotly's asymmetric error bars from each point's 95% interval (none where no point has one)."""
    if not any(p.get(ci) for p in points):
        return None
    return {"type": "data", "symmetric": False, "thickness": 1, "width": 2,
            "array": [(p[ci][1] - p[value]) if p.get(ci) else 0 for p in points],
            "arrayminus": [(p[value] - p[ci][0]) if p.get(ci) else 0 for p in points]}


def serving_axes_chart(sides: list[tuple[str, str, dict]], figure: str = "total"):
    """InferenceX's axes: tokens/s per GPU (`figure`: total = input + output, or output) against
    tokens/s per user, every run (configuration) of each side as a point labelled with its
    configuration and load, with its 95% intervals on both axes, and each side's envelope over all
    of them (comparison/envelope.py: the best throughput reachable at or above each interactivity,
    straight between its points as the comparison reads it); the envelope's points are named, the
    others in the hover. Points with failed requests or unchecked counts are drawn as x and left
    out of the envelope."""
    from gpuparity.comparison.envelope import envelope
    from gpuparity.report.serving import per_text

    value, ci, title = SERVING_FIGURES[figure]
    per = per_text([p for _, _, curves in sides for pts in curves.values() for p in pts])
    go = _go()
    fig = _figure()
    dashes = ("solid", "dash", "dot", "dashdot")
    for label, short, curves in sides:
        color = COLORS.get(label)
        named = 0
        for i, (ckey, pts) in enumerate(curves.items()):
            pts = [p for p in pts if p.get(value)]
            if not pts:
                continue
            xs, ys = envelope((p["interactivity"], p[value]) for p in pts if p["usable"])
            on = set(zip(xs.tolist(), ys.tolist(), strict=True))
            texts = []          # the envelope's points named by their configuration, as InferenceX does
            for p in pts:
                named += (p["interactivity"], p[value]) in on
                texts.append(t(f"{p['config']} {p['load']}") if (p["interactivity"], p[value]) in on
                             and named <= MAX_CONFIG_LABELS else "")
            fig.add_trace(go.Scatter(
                x=[p["interactivity"] for p in pts], y=[p[value] for p in pts], mode="markers+text",
                text=texts, textposition=TEXT_POSITION.get(label, "top right"), textfont={"size": 9, "color": color},
                cliponaxis=False,       # a configuration's name at the plot's edge drawn whole
                marker={"color": color, "size": 8, "symbol": ["circle" if p["usable"] else "x" for p in pts]},
                error_y=_error(pts, value, ci), error_x=_error(pts, "interactivity", "ci_interactivity"),
                customdata=[[t(f"{p['config']} {p['load']}"), p["per"]] for p in pts],
                name=t(f"{short}: {ckey}"), legendgroup=f"{label}{i}",
                hovertemplate="%{customdata[0]}<br>%{x:.1f} tok/s/user<br>%{y:.4g} tok/s per %{customdata[1]}"
                              "<extra></extra>"))
            if len(xs) > 1:
                fig.add_trace(go.Scatter(x=xs.tolist(), y=ys.tolist(), mode="lines", legendgroup=f"{label}{i}",
                                         line={"color": color, "dash": dashes[i % len(dashes)]},
                                         name=t(f"{short}: envelope over its runs"), hoverinfo="skip"))
    fig.update_layout(height=520, legend=LEGEND_BELOW, margin={"t": 30},
                      xaxis_title="interactivity (output tokens/s per user)", yaxis_title=f"{title} {per}")
    return fig


def serving_cost_chart(sides: list[tuple[str, str, dict, float | None]]):
    """Cost per million tokens (total, input + output) against tokens/s per user, from each side's
    price per GPU-hour (the price book, platform/prices.py): every per-GPU point of every run and
    the side's cheapest cost reachable at or above each interactivity (its throughput envelope).
    Per-server points have no per-GPU price and are left out. Log axis: costs span decades."""
    from gpuparity.comparison.envelope import envelope
    from gpuparity.platform.prices import usd_per_million_tokens

    go = _go()
    fig = _figure()
    for label, short, curves, usd in sides:
        if not usd:
            continue
        color = COLORS.get(label)
        for i, (ckey, pts) in enumerate(curves.items()):
            pts = [p for p in pts if p.get("total_per_gpu") and p["per"] == "GPU"]
            if not pts:
                continue
            cost = [usd_per_million_tokens(usd, p["total_per_gpu"]) for p in pts]
            fig.add_trace(go.Scatter(
                x=[p["interactivity"] for p in pts], y=cost, mode="markers",
                marker={"color": color, "size": 8, "symbol": ["circle" if p["usable"] else "x" for p in pts]},
                customdata=[[t(f"{p['config']} {p['load']}")] for p in pts], name=t(f"{short} (${usd:g}/GPU-h): {ckey}"),
                legendgroup=f"{label}{i}",
                hovertemplate="%{customdata[0]}<br>%{x:.1f} tok/s/user<br>$%{y:.4g} per 1M tokens<extra></extra>"))
            xs, ys = envelope((p["interactivity"], p["total_per_gpu"]) for p in pts if p["usable"])
            if len(xs) > 1:
                fig.add_trace(go.Scatter(x=xs.tolist(), y=[usd_per_million_tokens(usd, y) for y in ys.tolist()],
                                         mode="lines", line={"color": color}, legendgroup=f"{label}{i}",
                                         name=t(f"{short}: cheapest over its runs"), hoverinfo="skip"))
    fig.update_layout(height=480, legend=LEGEND_BELOW, margin={"t": 30}, yaxis_type="log",
                      xaxis_title="interactivity (output tokens/s per user)",
                      yaxis_title="$ per million tokens (input + output)")
    return fig


MAX_BARS = 60              # bars in one workload chart (the table lists every result)


def workload_chart(rows: list[dict], unit: str | None):
    """One workload's results (report.onerun's section rows) as horizontal bars (figure with its
    95% CI), each labelled with its % of the datasheet peak (training: its MFU; onerun.bar_text);
    the peak itself as a tick where the result has one in the same unit. Log axis when figures
    (or peaks) span more than 50x."""
    go = _go()
    rows = rows[:MAX_BARS]
    labels = bar_labels([r["label"] for r in rows])
    values = [r["value"] for r in rows]
    peaks = [((r["result"].get("derived") or {}).get("peak") or {}) for r in rows]
    peak_x = [p.get("value") if p.get("unit") == unit and isinstance(p.get("value"), (int, float)) else None
              for p in peaks]
    # The range covers the figures, peaks and CIs (a CI clipped to 3x its figure, so one wild interval
    # runs off the edge instead of squashing every bar), with room for the % labels.
    lows = [max(r["ci_low"] or r["value"], r["value"] / 3) for r in rows]
    highs = [min(r["ci_high"] or r["value"], r["value"] * 3) for r in rows] + [p for p in peak_x if p]
    spread = [v for v in values + lows + highs if isinstance(v, (int, float)) and v > 0]
    log = bool(spread) and max(spread) / min(spread) > 50
    if log:
        x_range = [math.log10(min(spread) / 1.5), math.log10(max(spread) * 1.6)]
    else:
        x_range = [0, max(spread, default=1.0) * 1.15]
    # On a log axis a bar from 0 has no left end: bars start at the axis' left edge instead.
    base = 10 ** x_range[0] if log else 0.0
    fig = _figure()
    fig.add_trace(go.Bar(
        x=[v - base for v in values], base=base, y=labels, orientation="h", name=t(unit or "figure"),
        marker={"color": ["#9ecae1" if r["flags"] else "#1f77b4" for r in rows]},
        error_x={"type": "data", "symmetric": False, "color": "#444", "thickness": 1.2, "width": 3,
                 "array": [max(0.0, h - v) for h, v in zip(highs, values, strict=False)],
                 "arrayminus": [max(0.0, v - lw) for lw, v in zip(lows, values, strict=True)]},
        customdata=[[t(r["flags"] or "no flags"), t(r["of_peak"] or "no datasheet peak"), r["value"]]
                    for r in rows],
        hovertemplate="%{y}<br>%{customdata[2]:.4g} " + t(unit or "") + "<br>%{customdata[1]}<br>%{customdata[0]}"
                      "<extra></extra>"))
    # the % label right of the CI's whisker (as bar text it began at the bar's end, under the whisker)
    fig.add_trace(go.Scatter(
        x=[max(h, v) for h, v in zip(highs, values, strict=False)], y=labels, mode="text", name="label",
        text=[r["bar_text"] for r in rows], textposition="middle right", hoverinfo="skip", cliponaxis=False))
    if any(p is not None for p in peak_x):
        fig.add_trace(go.Scatter(
            x=peak_x, y=labels, mode="markers", name="datasheet peak",
            marker={"symbol": "line-ns-open", "size": 18, "color": "#d62728", "line": {"width": 2}},
            hovertemplate="datasheet peak %{x:.4g} " + t(unit or "") + "<extra></extra>"))
    fig.update_layout(
        height=max(160, 70 + (14 + 12 * max((x.count("<br>") + 1 for x in labels), default=1)) * len(rows)),
        margin={"l": 10, "r": 20, "t": 10, "b": 40}, showlegend=False,
        bargap=0.25, xaxis={"type": "log" if log else "linear", "title": t(unit or ""), "range": x_range},
        yaxis={"autorange": "reversed", "automargin": True})
    return fig


def latency_chart(rows: list[dict], series: list[tuple[str, str, float]]):
    """Grouped bars of latency figures (e.g. TTFT and TPOT in ms) per result."""
    go = _go()
    fig = _figure()
    labels = bar_labels([r["label"] for r in rows[:MAX_BARS]])
    for name, field, scale in series:
        xs = [(r["result"].get("derived") or {}).get(field) for r in rows[:MAX_BARS]]
        fig.add_trace(go.Bar(x=[x * scale if isinstance(x, (int, float)) else None for x in xs], y=labels,
                             orientation="h", name=t(name), hovertemplate="%{y}<br>%{x:.4g} " + t(name)
                             + "<extra></extra>"))
    fig.update_layout(barmode="group", height=max(160, 70 + 40 * len(labels)), legend=LEGEND_BELOW,
                      margin={"l": 10, "r": 20, "t": 10, "b": 40}, xaxis={"title": "ms"},
                      yaxis={"autorange": "reversed", "automargin": True})
    return fig
