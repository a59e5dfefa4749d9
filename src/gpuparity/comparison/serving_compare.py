"""Serving results compared at equal interactivity (tokens/s per user) along each side's
best-throughput (Pareto) curve, with confidence intervals.

Each sweep point of a side is a (interactivity, throughput per GPU) pair of one configuration
(results/server_identity.run_config: the server identity, else the run's label), measured in one or
more trials (every run of that configuration holding the key, every trial of each:
info.serving.trials). Runs of one configuration are repeats; another configuration's point is
another point, and a side's envelope is over all of them, as InferenceX takes it over TP, EP,
precision, engine and load: each level of the table names the configuration that gives each
side's envelope there (a_config, b_config; "between X and Y" where it is read between two). Per point, on the
log scale: the estimate is the mean over its trials, its standard error s / sqrt(n) widened by
t(0.975, n - 1) / z for n >= 2 trials; a point with one trial takes its within-trial standard
error (serving_summary: log_se, interactivity_log_se) combined with the side's run-to-run spread
for serving (the comparison's prior: history, --run-spread or results.figure.RUN_SPREAD_DEFAULTS).
Levels of interactivity are
spread over the range both Pareto curves cover; at each, B / A is the ratio of the curves'
interpolated throughputs. Its interval is a parametric bootstrap (fixed seed): every point of
both sides is redrawn from its normal law, both envelopes rebuilt and interpolated again, and
the 2.5 / 97.5 percentiles of the ratios taken. Points with failed requests, or token counts no
tokenizer checked (usage.verified false), are left out. The verdict uses the comparison's
symmetric band (comparison/verdict.py); with a contended side it is at most inconclusive. The
envelope and its reading at a level are comparison/envelope.py's; where the two sides' ranges do
not overlap, the entry's note says so and which loads would close the gap (envelope.closing_loads).
A curve per GPU on one side and per server on the other gets no ratio (comparison/units.py).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from gpuparity.comparison.envelope import (
    closing_loads,
    envelope,
    envelope_index,
    levels_between,
    overlap,
    sources_at,
    throughput_at,
)
from gpuparity.comparison.sides import Side, serving_infos
from gpuparity.comparison.verdict import verdict

DRAWS = 2000
SEED = 20240601


def _trial_pairs(info: dict) -> list[tuple[float, float, float | None, float | None]]:
    """(interactivity, throughput, log se of each) per trial of one stored result."""
    s = info.get("serving") or {}

    def pairs(trials: list) -> list:
        out = []
        for t in trials:
            x, y = t.get("interactivity"), t.get("throughput_per_gpu")
            if isinstance(x, (int, float)) and isinstance(y, (int, float)) and x > 0 and y > 0:
                out.append((float(x), float(y), t.get("interactivity_log_se"), t.get("log_se")))
        return out

    # per-trial summaries where they carry the figures, else the point's own summary (one trial)
    return pairs([t for t in s.get("trials") or [] if isinstance(t, dict)]) or pairs([s])


def _point(trials: list[tuple], floor: float) -> tuple[float, float, float, float, int]:
    """(log x, log y, se of log x, se of log y, trials) of one sweep point."""
    from gpuparity.measure.stats import t_quantile

    lx = np.log([t[0] for t in trials])
    ly = np.log([t[1] for t in trials])
    n = len(trials)
    if n >= 2:
        widen = t_quantile(0.975, n - 1) / NormalDist().inv_cdf(0.975)
        return (float(lx.mean()), float(ly.mean()), widen * float(lx.std(ddof=1)) / math.sqrt(n),
                widen * float(ly.std(ddof=1)) / math.sqrt(n), n)

    def within(se) -> float:
        se = se if isinstance(se, (int, float)) and math.isfinite(se) else 0.0
        return math.sqrt(se * se + floor * floor)

    return float(lx[0]), float(ly[0]), within(trials[0][2]), within(trials[0][3]), 1


def _serving_results(side: Side):
    """(curve key, the point's per-run infos) of each serving result of a side."""
    for i, extra in side.extras.items():
        if side.meta[i][1] != "serving":
            continue
        infos = extra.get("infos") or [extra.get("info") or {}]
        yield (extra.get("info") or infos[-1]).get("curve_key"), infos


def _serving_per(side: Side) -> dict[str, str]:
    """Per curve key, what its throughput is per: "GPU" where every point's server GPUs were
    given (gpus=), "server" where none was, "GPU or server" where the points differ."""
    kinds: dict[str, set] = {}
    for ckey, infos in _serving_results(side):
        if ckey:
            gpus = (infos[-1].get("serving") or {}).get("gpus")
            kinds.setdefault(str(ckey), set()).add("GPU" if gpus else "server")
    return {k: " or ".join(sorted(v)) for k, v in kinds.items()}


def throughput_header(entries: list[dict], side: str) -> str:
    """The column header of a side's throughput in the equal-interactivity table (every view)."""
    per = sorted({p.get(f"{side}_per") or "GPU" for p in entries}) or ["GPU"]      # older documents: GPU
    return f"{side.upper()} tok/s per {' or '.join(per)}"


def _serving_points(side: Side, floor: float, loads: dict | None = None) -> dict[str, list[tuple]]:
    """Per curve key, each point's (log x, log y, se, se, trials, configuration name): one point per
    key and configuration (results/server_identity.run_config: the server identity, else the run's
    label), whose runs' trials are its repeats; other configurations are other points (envelope
    candidates, never repeats). A configuration is named (None: one unnamed) where it has a name or
    its curve holds several (then, without a name, by its first run's id). `loads` (given) gets per
    curve key the points' (load, interactivity) for closing_loads."""
    from gpuparity.results.server_identity import run_config

    groups: dict[tuple, dict] = {}
    for i, info, run in serving_infos(side):
        extra = side.extras[i]
        ckey = (extra.get("info") or extra["infos"][-1]).get("curve_key")
        cfg, name = run_config(info.get("server_identity"), run.get("label"))
        g = groups.setdefault((str(ckey), i, cfg), {"trials": [], "name": name, "run": run.get("run_id"),
                                                    "params": side.meta[i][2]})
        s = info.get("serving") or {}
        # invalid requests (errors, timeouts, usage that contradicts the stream) or counts no
        # tokenizer checked: no claim rests on that point
        if ckey and (s.get("errors") or 0) + (s.get("timeouts") or 0) == 0 \
                and (s.get("usage") or {}).get("verified") is not False:
            g["trials"] += _trial_pairs(info)
    configs: dict[str, set] = {}
    for ckey, _, cfg in groups:
        configs.setdefault(ckey, set()).add(cfg)
    named: dict[tuple, set] = {}          # a name two configurations of a curve share: told apart by run
    for (ckey, _, cfg), g in groups.items():
        named.setdefault((ckey, g["name"]), set()).add(cfg)
    curves: dict[str, list] = {}
    for (ckey, _, _cfg), g in groups.items():
        if not g["trials"]:
            continue
        name = g["name"] or (str(g["run"]) if len(configs[ckey]) > 1 else None)
        if g["name"] and len(named[(ckey, g["name"])]) > 1:
            name = f"{name} ({g['run']})"
        pt = (*_point(g["trials"], floor), name)
        curves.setdefault(ckey, []).append(pt)
        if loads is not None:
            loads.setdefault(ckey, []).append((load_of(g["params"]), math.exp(pt[0])))
    return curves


def load_of(params) -> float | None:
    """The load a sweep point was run at: its concurrency, else its request rate (None: neither)."""
    import json

    p = json.loads(params) if isinstance(params, str) else params or {}
    for name in ("concurrency", "request_rate"):
        v = p.get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None




def _scales(rng: np.random.Generator, draws: int, df: float) -> np.ndarray:
    """Per bootstrap draw, the factor that makes a prior's normal draws a t of its df (ones: known)."""
    return np.sqrt(df / rng.chisquare(df, (draws, 1))) if math.isfinite(df) and df > 0 else np.ones((draws, 1))


def _draws(points: list[tuple], rng: np.random.Generator, draws: int, spread_scale: np.ndarray | None = None
           ) -> tuple[np.ndarray, np.ndarray]:
    """Each point redrawn from its law; one-trial points (whose spread is the side's prior) scaled
    by `spread_scale` (_scales: one uncertain figure for all of a side's points, a t of its df)."""
    p = np.array([pt[:4] for pt in points])
    scale = np.ones((draws, 1))
    if spread_scale is not None:
        one = np.array([pt[4] == 1 for pt in points])
        scale = np.where(one[None, :], spread_scale, 1.0)
    xs = np.exp(p[:, 0] + p[:, 2] * scale * rng.standard_normal((draws, len(p))))
    ys = np.exp(p[:, 1] + p[:, 3] * scale * rng.standard_normal((draws, len(p))))
    return xs, ys


def _curve_at(xs: np.ndarray, ys: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """The envelope's throughput at each level, per draw (rows); a draw whose envelope does not
    reach a level is held at its nearest end (as the point estimate's range is the overlap)."""
    out = np.empty((len(xs), len(levels)))
    for d in range(len(xs)):
        ex, ey = envelope(zip(xs[d].tolist(), ys[d].tolist(), strict=True))
        out[d] = np.interp(levels, ex, ey)
    return out


def serving_at_equal_interactivity(a: Side, b: Side, tolerance: float = 0.05, levels: int = 5,
                                   floor: float | tuple | None = None, draws: int = DRAWS,
                                   contended: bool = False, df: tuple | None = None) -> list[dict]:
    """Throughput per GPU of B over A at equal tokens/s per user (see the module notes): one
    entry per curve key and level, with ratio, ci_low, ci_high, verdict and how many trials
    back each side's points. floor: the run-to-run spread of a one-trial point, one for both
    sides or (A's, B's); None: the serving default (with its 2 prior df). df: (A's, B's) degrees
    of freedom of those spreads (infinite: known)."""
    from gpuparity.comparison.priors import DEFAULT_DF
    from gpuparity.results.figure import run_spread_default

    fa, fb = floor if isinstance(floor, tuple) else (floor, floor)
    da, db = df if df is not None else (math.inf if fa is not None else DEFAULT_DF,
                                        math.inf if fb is not None else DEFAULT_DF)
    fa = run_spread_default("serving") if fa is None else fa
    fb = run_spread_default("serving") if fb is None else fb
    loads_a, loads_b = {}, {}
    pa, pb = _serving_points(a, fa, loads_a), _serving_points(b, fb, loads_b)
    per_a, per_b = _serving_per(a), _serving_per(b)
    rng = np.random.default_rng(SEED)
    out = []
    for ckey in sorted(set(pa) & set(pb)):
        if per_a.get(ckey, "GPU") != per_b.get(ckey, "GPU"):     # one unit per column (comparison/units.py)
            out.append({"curve_key": ckey, "interactivity": None, "ratio": None, "ci_low": None, "ci_high": None,
                        "a_per": per_a.get(ckey, "GPU"), "b_per": per_b.get(ckey, "GPU"), "verdict": None,
                        "note": f"A's throughput is per {per_a.get(ckey, 'GPU')}, B's per {per_b.get(ckey, 'GPU')}: "
                                "per-GPU and per-server figures never share a ratio, so no ratio and no verdict"})
            continue
        (env_a, names_a), (env_b, names_b) = _envelope_of(pa[ckey]), _envelope_of(pb[ckey])
        span = overlap(env_a, env_b)
        if span is None:            # say why, and which loads would give a common level
            out.append({"curve_key": ckey, "interactivity": None, "ratio": None, "ci_low": None, "ci_high": None,
                        "a_per": per_a.get(ckey, "GPU"), "b_per": per_b.get(ckey, "GPU"), "verdict": None,
                        "note": closing_loads(loads_a.get(ckey, []), loads_b.get(ckey, []),
                                              "c" if "rate" not in ckey.split() else "rate")})
            continue
        at = levels_between(*span, levels)
        # both sides on one default spread: one uncertain figure, one scale (estimate.pair_df counts it once)
        sa = _scales(rng, draws, da)
        sb = sa if (da, fa) == (db, fb) and math.isfinite(da) else _scales(rng, draws, db)
        ratio_draws = (_curve_at(*_draws(pb[ckey], rng, draws, sb), at)
                       / _curve_at(*_draws(pa[ckey], rng, draws, sa), at))
        basis = {side: ("trials" if all(p[4] >= 2 for p in pts) else
                        f"single trial + {100 * f:g}% run-to-run spread")
                 for side, pts, f in (("a", pa[ckey], fa), ("b", pb[ckey], fb))}
        ta_all, tb_all = throughput_at(env_a, at), throughput_at(env_b, at)
        # which configuration of each side gives its envelope at each level (None: one unnamed)
        src_a, src_b = sources_at(env_a[0], names_a, at), sources_at(env_b[0], names_b, at)
        for j, x in enumerate(at.tolist()):
            ta, tb = float(ta_all[j]), float(tb_all[j])
            ratio = tb / ta if ta > 0 else None
            ci_lo, ci_hi = (float(v) for v in np.percentile(ratio_draws[:, j], [2.5, 97.5]))
            out.append({"curve_key": ckey, "interactivity": x, "a_throughput": ta, "b_throughput": tb,
                        "ratio": ratio, "ci_low": ci_lo, "ci_high": ci_hi,
                        "verdict": verdict(ci_lo, ci_hi, tolerance) if ratio and not contended else "inconclusive",
                        "a_points": len(pa[ckey]), "b_points": len(pb[ckey]),
                        "a_per": per_a.get(ckey, "GPU"), "b_per": per_b.get(ckey, "GPU"),
                        "a_trials": sum(p[4] for p in pa[ckey]), "b_trials": sum(p[4] for p in pb[ckey]),
                        "a_config": src_a[j], "b_config": src_b[j],
                        "a_configs": _names(pa[ckey]), "b_configs": _names(pb[ckey]), "ci_basis": basis})
    return out


def _envelope_of(points: list[tuple]) -> tuple[tuple[np.ndarray, np.ndarray], list]:
    """A curve's envelope over its points (every configuration's) and the configuration name of
    each of the envelope's points."""
    raw = [(math.exp(p[0]), math.exp(p[1])) for p in points]
    on = envelope_index(raw)
    return (np.array([raw[i][0] for i in on]), np.array([raw[i][1] for i in on])), [points[i][5] for i in on]


def _names(points: list[tuple]) -> list[str]:
    """The named configurations a side's curve holds (its envelope's candidates), in order."""
    return list(dict.fromkeys(p[5] for p in points if p[5]))


def mixed_configs(side: Side) -> dict[int, list]:
    """Per serving key of a side whose runs served it in several configurations (run_config): the
    configurations' names. Its per-key figure would pool them as repeats: compare holds its
    verdict, and the equal-interactivity table compares them along the envelope instead."""
    from gpuparity.results.server_identity import run_config

    cfgs: dict[int, dict] = {}
    for i, info, run in serving_infos(side):
        cfg, name = run_config(info.get("server_identity"), run.get("label"))
        cfgs.setdefault(i, {}).setdefault(cfg, name or run.get("run_id") or "?")
    return {i: list(c.values()) for i, c in cfgs.items() if len(c) > 1}


def serving_curves(side: Side) -> dict[str, dict]:
    """Point estimates and the Pareto envelope per curve key (for plots)."""
    from gpuparity.results.figure import run_spread_default

    out = {}
    for ckey, pts in _serving_points(side, run_spread_default("serving")).items():
        raw = [(math.exp(p[0]), math.exp(p[1])) for p in pts]
        xs, ys = envelope(raw)
        out[ckey] = {"points": sorted(raw), "pareto": [[x, y] for x, y in zip(xs.tolist(), ys.tolist(), strict=True)]}
    return out


def prior_spread(est) -> float | None:
    """The run-to-run spread a one-trial serving point adds: the serving category's prior in a
    side's estimate (comparison/estimate.SideEstimate)."""
    b = est.basis.get("serving")
    return b["spread"] if b else None


def prior_df(est) -> float:
    """The degrees of freedom of the serving category's prior (infinite: measured or set)."""
    b = est.basis.get("serving") or {}
    return float(b["df"]) if b.get("source") not in (None, "runs", "set") and b.get("df") else math.inf
