"""The claims page's charts (plotly): per claim, the claimed band against each measured ratio (or, for
InferenceX, the ratio along interactivity); per generation pair, ROCm's gap to CUDA round by round; per
part, the same systems across rounds with their stacks. Text from data goes through plots.t."""

from __future__ import annotations

import math

from gpuparity.report.plots import LEGEND_BELOW, _figure, ratio_ticks, t

GRADE_COLORS = {"supported": "#2ca02c", "partly": "#bcbd22", "not supported": "#9467bd", "contradicted": "#d62728",
                "mixed": "#17becf"}
BAND = "rgba(31, 119, 180, 0.15)"
LINE_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
               "#17becf")


def claimed_band(bounds: dict | None) -> tuple[float | None, float | None]:
    """The claimed band widened by its tolerance (None: open); parity is symmetric on the log scale."""
    if not bounds:
        return None, None
    lo, hi, tol = bounds["low"], bounds["high"], bounds["tolerance"]
    if lo == hi == 1:
        return 1 / (1 + tol), 1 + tol
    return (lo * (1 - tol) if lo is not None else None), (hi * (1 + tol) if hi is not None else None)


def _range(values: list[float], band: tuple) -> tuple[float, float]:
    xs = [v for v in values + [b for b in band if b] + [1.0] if v and v > 0]
    return math.log10(min(xs) / 1.3), math.log10(max(xs) * 1.3)


def _small(fig, height: int, title: str):
    fig.update_layout(height=height, margin={"l": 10, "r": 10, "t": 36, "b": 10}, title={"text": title, "x": 0,
                      "font": {"size": 13}}, showlegend=False)
    return fig


def claim_chart(c: dict):
    """The claimed band (shaded), 1 (parity, dotted) and each measured ratio, coloured by its grade."""
    checks = [k for k in c.get("checks") or [] if not k.get("absolute")]
    if any(k.get("levels") for k in checks):
        return _levels_chart(c, checks)
    fig = _figure()
    band = claimed_band(c.get("bounds"))
    measured = [k for k in checks if isinstance(k.get("value"), (int, float)) and k["value"] > 0]
    values = [k["value"] for k in measured] + [s for k in measured for s in (k.get("spread") or [])]
    x0, x1 = _range(values, band)
    lo, hi = (math.log10(band[0]) if band[0] else x0), (math.log10(band[1]) if band[1] else x1)
    fig.add_vrect(x0=10 ** lo, x1=10 ** hi, fillcolor=BAND, line_width=0, layer="below")
    fig.add_vline(x=1, line_dash="dot", line_color="#888")
    labels = [t(k["label"], 48) for k in measured] or [t(c.get("verdict"))]
    for k, label in zip(measured, labels, strict=False):
        spread = k.get("spread")
        err = {"type": "data", "symmetric": False, "array": [spread[1] - k["value"]],
               "arrayminus": [k["value"] - spread[0]], "color": "#666"} if spread else None
        fig.add_scatter(x=[k["value"]], y=[label], mode="markers", error_x=err,
                        marker={"size": 11, "color": GRADE_COLORS.get(k["grade"], "#444")},
                        hovertext=[t(k["summary"], 400)], hoverinfo="text", name=t(k["grade"]))
    if not measured:
        note = next((k["summary"] for k in c.get("checks") or []), None) or c.get("verdict")
        fig.add_scatter(x=[10 ** ((lo + hi) / 2)], y=[labels[0]], mode="markers", marker={"size": 1, "opacity": 0},
                        hoverinfo="skip")
        fig.add_annotation(text=t(f"no measured ratio: {note}", 110), x=0.5, y=0.5, xref="paper", yref="paper",
                           showarrow=False, font={"size": 12, "color": "#555"})
    fig.update_xaxes(type="log", range=[x0, x1], tickvals=ratio_ticks(x0, x1),
                     ticktext=[f"{v:g}x" for v in ratio_ticks(x0, x1)], title_text=t("subject / baseline"))
    fig.update_yaxes(autorange="reversed", automargin=True)
    return _small(fig, 120 + 26 * max(len(measured), 1),
                  t(f"{c['id']}: claimed {c.get('expected') or '-'} (shaded), measured ratios", 110))


def _levels_chart(c: dict, checks: list[dict]):
    """InferenceX: the ratio at each interactivity level, one line per sequence lengths and decoding."""
    fig = _figure()
    band = claimed_band(c.get("bounds"))
    ratios = [lv["ratio"] for k in checks for lv in k.get("levels") or []]
    y0, y1 = _range(ratios, band)
    lo, hi = (band[0] or 10 ** y0), (band[1] or 10 ** y1)
    fig.add_hrect(y0=lo, y1=hi, fillcolor=BAND, line_width=0, layer="below")
    fig.add_hline(y=1, line_dash="dot", line_color="#888")
    for i, k in enumerate(checks):
        levels = k.get("levels") or []
        fig.add_scatter(x=[lv["interactivity"] for lv in levels], y=[lv["ratio"] for lv in levels],
                        mode="lines+markers", name=t(k["label"]), line={"color": LINE_COLORS[i % len(LINE_COLORS)]},
                        marker={"size": 8, "color": [GRADE_COLORS.get(lv["grade"], "#444") for lv in levels]},
                        hovertext=[t(f"{k['label']}: {lv['interactivity']:.1f} tok/s/user, ratio {lv['ratio']:.3f} "
                                     f"({lv['b']:.0f} vs {lv['a']:.0f} tok/s/GPU): {lv['grade']}", 300)
                                   for lv in levels], hoverinfo="text")
    fig.update_xaxes(type="log", title_text="interactivity (tok/s per user)")
    fig.update_yaxes(type="log", range=[y0, y1], tickvals=ratio_ticks(y0, y1),
                     ticktext=[f"{v:g}x" for v in ratio_ticks(y0, y1)], title_text=t("subject / baseline"))
    fig = _small(fig, 360, t(f"{c['id']}: ratio at equal interactivity vs claimed {c.get('expected') or '-'} (shaded)", 110))
    fig.update_layout(showlegend=True, legend=LEGEND_BELOW, margin={"l": 10, "r": 10, "t": 36, "b": 90})
    return fig


def _over_rounds(fig, rounds: set[str], y_title: str, title: str):
    """Rounds in order along x (categories), the legend below: the layout of both charts over rounds."""
    order = [f"v{r}" for r in sorted(rounds, key=lambda r: tuple(map(int, r.split("."))))]
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=order, title_text="round")
    fig.update_yaxes(title_text=y_title)
    fig = _small(fig, 340, t(title, 100))
    fig.update_layout(showlegend=True, legend=LEGEND_BELOW, margin={"l": 10, "r": 10, "t": 36, "b": 110})
    return fig


def gap_chart(g: dict):
    """ROCm / CUDA speed round by round for one generation pair, one line per benchmark and scale."""
    fig = _figure()
    fig.add_hline(y=1, line_dash="dot", line_color="#888")
    rounds = {p["round"] for line in g["lines"] for p in line["points"]}
    for i, line in enumerate(g["lines"]):
        what = " ".join(x for x in ("training" if line["source"] == "mlperf-training" else "inference", line["benchmark"],
                                    line["scenario"] or "", line["precision"] or "", f"{line['accelerators']} acc.")
                        if x)
        fig.add_scatter(x=[f"v{p['round']}" for p in line["points"]], y=[p["ratio"] for p in line["points"]],
                        mode="lines+markers", name=t(what, 60), line={"color": LINE_COLORS[i % len(LINE_COLORS)]},
                        hovertext=[t(f"{what} v{p['round']}: ROCm / CUDA {p['ratio']:.3f} ({p['rocm']:,.4g} vs "
                                     f"{p['cuda']:,.4g}; {line['units']})", 300) for p in line["points"]],
                        hoverinfo="text")
    return _over_rounds(fig, rounds, "ROCm / CUDA (1 = parity)", f"{g['pair']}: ROCm's gap to CUDA over rounds")


def trend_chart(part: str, items: list[dict]):
    """The same systems across rounds: each figure over the system's first (higher: faster), stacks named."""
    fig = _figure()
    fig.add_hline(y=1, line_dash="dot", line_color="#888")
    rounds = {p["round"] for s in items for p in s["points"]}
    for i, s in enumerate(items):
        first = s["points"][0]["value"]
        training = s["source"] == "mlperf-training"
        ys = [(first / p["value"]) if training else (p["value"] / first) for p in s["points"]]
        what = f"{s['submitter']} {s['system']}: {s['benchmark']} {s['scenario'] or ''}".strip()
        what += f" ({s['points'][0]['stack'].split(',')[0]} -> {s['points'][-1]['stack'].split(',')[0]})"
        fig.add_scatter(x=[f"v{p['round']}" for p in s["points"]], y=ys,
                        mode="lines+markers+text" if len(items) <= 2 else "lines+markers",  # few: stacks named
                        text=[t(p["stack"].split(",")[0], 30) for p in s["points"]], textposition="top center",
                        name=t(what, 60), line={"color": LINE_COLORS[i % len(LINE_COLORS)]},
                        hovertext=[t(f"{what} v{p['round']}: {p['value']:,.4g} {s['units']}"
                                     f"{'' if training else ' per accelerator'} ({p['stack']})", 300) for p in s["points"]],
                        hoverinfo="text")
    return _over_rounds(fig, rounds, "speed over the system's first round",
                        f"{part}: the same systems across rounds, each with its software stack")
