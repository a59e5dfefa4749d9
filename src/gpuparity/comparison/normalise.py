"""Normalised views of a comparison: per spec peak, per GPU-hour price, per watt."""

from __future__ import annotations

import numpy as np

from gpuparity.comparison.sides import Side
from gpuparity.comparison.verdict import INCONCLUSIVE, VERDICTS, verdicts

NORMALISED = ("per_peak", "per_dollar", "per_watt")


def peak_kind_of(workload: str | None, unit: str | None, dtype: str | None, kind: str | None,
                 params: dict | str | None = None) -> str | None:
    """A result's peak kind (results.figure.peak_kind_for); results stored before kinds were
    recorded get theirs from the workload: GEMM-like TFLOP/s by dtype, memory kernels against HBM,
    host copies against the host link, collectives against the fabric; anything else (a tokens/s
    figure without its FLOP per token) has none."""
    if kind:
        return kind
    if unit == "TFLOP/s":
        return f"flop:{dtype or ''}"
    if unit == "GB/s":
        if workload == "collectives":      # across nodes the NIC's, which no datasheet holds
            nodes = _param(params, "nodes")
            return "bytes:interconnect" if not isinstance(nodes, int) or nodes <= 1 else "bytes:nic"
        if workload == "memory":
            text = params if isinstance(params, str) else str((params or {}).get("op"))
            return "bytes:host" if ("h2d" in text or "d2h" in text) else "bytes:hbm"
    return None


def _param(params: dict | str | None, name: str):
    """One parameter of a result's params (a dict, or the JSON text a store holds)."""
    if isinstance(params, str):
        import json

        try:
            params = json.loads(params)
        except ValueError:
            return None
    return params.get(name) if isinstance(params, dict) else None


def peak_of(spec: dict | None, kind: str | None, unit: str | None) -> float | None:
    """The peak in the figure's unit (results.figure.unit_peak: the one rule every view applies)."""
    from gpuparity.results.figure import unit_peak

    return unit_peak(spec, kind, unit)


def _facts(side: Side, idx: np.ndarray, prices) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """Per key idx[j] of a side: peak (in the unit of the key's figure), GPU-hour price, watts (NaN
    where unknown) and the power source ("measured" telemetry, datasheet "tdp", or None). Looked
    up once per (run, peak kind, unit)."""
    cache: dict = {}

    def lookup(run: int, kind, unit) -> tuple:
        ck = (run, kind, unit)
        if ck not in cache:
            spec = side.runs[run]["fingerprint"].get("spec") if side.runs else None
            price = prices.price((spec or {}).get("id"))[0] if prices else None
            tdp = (spec or {}).get("tdp_w")
            cache[ck] = (peak_of(spec, kind, unit) or np.nan, price or np.nan, float(tdp) if tdp else np.nan)
        return cache[ck]

    def kind_of(i: int) -> tuple:
        w, _, params, dtype, unit = side.meta[i]
        return peak_kind_of(w, unit, dtype, side.peak_kind[i], params), unit

    looked = [lookup(run, *kind_of(i)) for run, i in zip(side.newest_run[idx].tolist(), idx.tolist(), strict=True)]
    peak, price, tdp = np.array(looked, dtype=float).reshape(len(idx), 3).T
    measured = np.isfinite(side.power[idx])
    # a serving figure's power is its server's GPUs', measured, or none (workloads/serving/power.py):
    # never a datasheet TDP of the client's machine; per GPU where the figure is per GPU
    serving = np.array([side.meta[i][1] == "serving" for i in idx.tolist()], dtype=bool)
    if serving.any():
        tdp = np.where(serving, np.nan, tdp)
        per = np.array([_server_gpus(side, i) for i in idx.tolist()], dtype=float)
        watts_measured = np.where(serving, side.power[idx] / per, side.power[idx])
    else:
        watts_measured = side.power[idx]
    watts = np.where(measured, watts_measured, tdp)
    source = np.where(measured, "measured", np.where(np.isfinite(tdp), "tdp", "")).tolist()
    for j in np.nonzero(serving & ~measured)[0].tolist():      # the reason a serving row has no per-watt figure
        why = ((side.extras.get(int(idx[j])) or {}).get("info") or {}).get("power_scope")
        source[j] = f"not measured: {why}" if why else ""
    return peak, price, watts, [x or None for x in source]


def _server_gpus(side: Side, i: int) -> float:
    """The GPUs a serving key's figure is per (its summary's gpus where the unit is per GPU), else 1."""
    if side.meta[i][1] != "serving" or not str(side.meta[i][4] or "").endswith("/GPU"):
        return 1.0
    gpus = (((side.extras.get(i) or {}).get("info") or {}).get("serving") or {}).get("gpus")
    return float(gpus) if isinstance(gpus, int) and gpus > 0 else 1.0


def _ratio_or_nan(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x / y where both are known and y is not zero; NaN elsewhere."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(x) & np.isfinite(y) & (y != 0), x / y, np.nan)


def _listed(x: np.ndarray) -> list:
    """Floats for JSON: NaN and infinities become None."""
    x = np.asarray(x, dtype=float)
    out = x.astype(object)
    out[~np.isfinite(x)] = None
    return out.tolist()


def _normalised_columns(value: np.ndarray, peak, price, watts, source, units: list, tag: str) -> dict:
    """One side's per-peak, per-dollar and per-watt figures, as columns. A figure above its peak
    (results.figure.pct_of_peak) blanks that peak in place, so no per-peak ratio uses it either;
    "_{tag}_exceeded" (a boolean array, for the caller's flags) says where."""
    from gpuparity.platform.prices import usd_per_million_tokens
    from gpuparity.results.figure import pct_of_peak

    pct, exceeded = pct_of_peak(value, peak)
    peak[exceeded] = np.nan
    tokens = np.where([(u or "").startswith("tokens/s") for u in units], value, np.nan)  # tokens/s(/GPU)
    price_l, tokens_l = _listed(price), _listed(tokens)
    return {
        f"_{tag}_exceeded": exceeded, f"{tag}_peak": _listed(peak), f"{tag}_pct_peak": _listed(pct),
        f"{tag}_usd_per_hour": price_l, f"{tag}_per_dollar": _listed(_ratio_or_nan(value, price)),
        f"{tag}_watts": _listed(watts), f"{tag}_power_source": source,
        f"{tag}_per_watt": _listed(_ratio_or_nan(value, watts)),
        f"{tag}_usd_per_mtok": [usd_per_million_tokens(p, t) for p, t in zip(price_l, tokens_l, strict=True)],
        f"{tag}_tokens_per_kw": _listed(_ratio_or_nan(tokens, watts / 1000.0)),
    }


def dollar_range(a: Side, ia: np.ndarray, b: Side, ib: np.ndarray, prices, point: np.ndarray):
    """Per matched key: the lowest and highest price factor A / B (per-dollar ratios scale by it)
    over the price book's bases, both sides on one basis (a price the user set holds on all),
    widened to hold the factor of the basis chosen (`point`); NaN where a price is unknown."""
    def spec(side: Side, run: int):
        return ((side.runs[run]["fingerprint"].get("spec") or {}).get("id")) if side.runs else None

    cache: dict = {}
    lo, hi = np.full(len(ia), np.nan), np.full(len(ia), np.nan)
    factor_range = getattr(prices, "factor_range", None)
    if factor_range is None:
        return point, point
    for j, (ra, rb) in enumerate(zip(a.newest_run[ia].tolist(), b.newest_run[ib].tolist(), strict=True)):
        if (ra, rb) not in cache:
            cache[(ra, rb)] = factor_range(spec(a, ra), spec(b, rb))
        got = cache[(ra, rb)]
        if got:
            lo[j], hi[j] = got
    with np.errstate(invalid="ignore"):
        return np.fmin(lo, point), np.fmax(hi, point)


def normalised_ratios(a: Side, ia: np.ndarray, b: Side, ib: np.ndarray, prices, facts_a: tuple, facts_b: tuple,
                      ratio: np.ndarray, lo: np.ndarray, hi: np.ndarray, flagged: np.ndarray,
                      tolerance: float) -> tuple[dict, dict, dict, np.ndarray]:
    """Per matched key (ia, ib; each side's _facts): the ratio, CI and verdict per peak, per $ and
    per W as columns, with the factors and factor ranges the category means reuse and where both
    sides measured power: (columns, factors, ranges, measured). A flagged key's verdicts are held
    at inconclusive; per W has a verdict only on measured power."""
    measured = np.array([sa == sb == "measured" for sa, sb in zip(facts_a[3], facts_b[3], strict=True)], dtype=bool)
    cols, factors, ranges = {}, {}, {}
    for suffix, fa, fb in zip(NORMALISED, facts_a[:3], facts_b[:3], strict=True):
        # Per peak / per $ / per W ratio = (B/x_B) / (A/x_A) = ratio * x_A / x_B; the CI scales alike,
        # per $ by the price factor's range over the price book's bases (its uncertainty)
        f = factors[suffix] = _ratio_or_nan(fa, fb)
        f_lo, f_hi = ranges[suffix] = dollar_range(a, ia, b, ib, prices, f) if suffix == "per_dollar" else (f, f)
        cols[f"ratio_{suffix}"], cols[f"ci_low_{suffix}"], cols[f"ci_high_{suffix}"] = (
            _listed(ratio * f), _listed(lo * f_lo), _listed(hi * f_hi))
        known = np.isfinite(f) & (measured if suffix == "per_watt" else True)     # per W: measured power only
        codes = np.where(flagged, INCONCLUSIVE, verdicts(lo * f_lo, hi * f_hi, tolerance))
        cols[f"verdict_{suffix}"] = [VERDICTS[v] if k else None
                                     for v, k in zip(codes.tolist(), known.tolist(), strict=True)]
    return cols, factors, ranges, measured
