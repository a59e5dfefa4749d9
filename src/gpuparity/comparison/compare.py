"""Compare two platforms: per-key ratio B/A with its interval, verdicts, category means, and
the same ratios normalised per spec peak, per GPU-hour price and per watt. This module runs a
comparison from its sides to its document (compare_sides); each step is a module of its own:

- the sides: comparison/sides.py (loading), comparison/flags.py (their flags; which hold a verdict)
- the prior for a one-run side's run-to-run spread: the store's history over occasions
  (comparison/history.py) or a default with 2 df (comparison/priors.py)
- the columnar core, ratio, interval and verdict per key: comparison/ratios.py; the statistics in
  comparison/estimate.py (read its notes: the run as the unit, moderated variances, the symmetric
  band, multiplicity)
- the rows: comparison/rows.py, normalised per peak, $ and W by comparison/normalise.py
- the category means: comparison/category_means.py (the means themselves: comparison/means.py)
- serving at equal interactivity: comparison/serving_compare.py
- each side summarised, A/A and the scope: comparison/side_summary.py; the notes: comparison/notes.py
- the gate of `compare --fail-if-slower`: comparison/gate.py

Rules beyond the statistics:
- A result flagged unstable, host_bound or contended on either side is at most "inconclusive"; so
  is a serving point whose token counts no tokenizer checked (unverified_tokens: the server's word
  alone makes no claim), and a category mean whose results are mostly flagged. Each row's and
  mean's "held" says why its verdict is held there (None: not held).
- A result flagged "throttled" (the loop kept batches timed with the SM clock below 3/4 of its
  warmed-up clock, measure/loop.py) is held too when the driver's reasons for it were thermal or
  hardware slowdown, or were not recorded: heat and hardware faults are a state of this box at
  that moment, not of the platform. Power (or current) capping alone is not held: a GPU at its
  power cap runs at the clock the cap allows, its steady state under load, which is what the
  platform delivers (platform/machine.py draws the same line for contention).
- A side with a contended run (the machine was busy: platform/machine.py) gives no faster or
  slower verdict anywhere in the comparison (rows, means, normalised views, serving); the notes,
  doc["contended"], each side summary and the headline say which side and why.
- Per peak: each result against its own peak kind (HBM for memory kernels, the fabric for
  collectives, the host link for host<->device copies, the dtype's dense peak for FLOP/s).
- Per dollar: the ratio scales by price A / price B; its interval by that factor's range over the
  price book's bases (comparison/normalise.dollar_range), so a verdict holds at any of them.
- Per watt: a verdict only where both sides measured power; datasheet TDP (on either side) gives a
  plain ratio with a note and no verdict.
- Means: per category, and "all" with categories weighted equally (comparison/means.py); a mean
  whose keys disagree beyond the band reads "mixed" (comparison/heterogeneity.py).
- Load: each row carries the CPU load its figures were timed beside (a_load, b_load) and, for a
  one-run side, the run-to-run spread it assumed (a_spread, b_spread); a busy result's interval is
  widened for its load (comparison/load.py).
- A/A: sides whose fingerprints are identical (host, hardware, driver, stack, libraries, env
  flags) are said to be an A/A comparison: any faster/slower there is noise or drift. Serving
  results of different servers (their identities differ) are never A/A.
- Serving: the servers' identities and accuracy evals are checked first (comparison/server_checks.py):
  differing configurations hold every serving verdict unless cross_config, differing answers always.
- Scope: with one box a side the verdicts are about those boxes; doc["scope"] says what a claim
  about the products assumes.
"""

from __future__ import annotations

import numpy as np

from gpuparity.comparison.category_means import category_means
from gpuparity.comparison.flags import read_throttle_infos
from gpuparity.comparison.intervals import LEVEL
from gpuparity.comparison.multiplicity import fdr_counts, fdr_verdicts
from gpuparity.comparison.notes import document_notes
from gpuparity.comparison.ratios import compare_core
from gpuparity.comparison.rows import not_compared, only_on, result_rows
from gpuparity.comparison.server_checks import server_check_lines, server_checks
from gpuparity.comparison.serving_compare import prior_df, prior_spread, serving_at_equal_interactivity
from gpuparity.comparison.side_summary import compared_sides, scope
from gpuparity.comparison.sides import Side, gc_paused, side_from_runs
from gpuparity.comparison.units import note as units_note


@gc_paused
def compare_sides(a: Side, b: Side, tolerance: float = 0.05, prices=None, level: float = LEVEL,
                  floor: float | None = None, history=None, stores=None, cross_config: bool = False) -> dict:
    """The comparison document (see compare_runs); the statistics come from `compare_core`, and
    every per-row figure is computed as a column (100k rows in about a second).

    history: where a one-run side's run-to-run spread is learned (comparison/history.store_for):
    None (not at all: the default or `floor`), "auto" (the store a side came from, else the
    default store if it exists) or {label: store url}. stores: the command's StorePool (the
    history is read through the connection the sides came through). cross_config: compare serving
    results of servers configured differently (comparison/server_checks.py), labelled as such."""
    if prices is None:
        from gpuparity.platform.prices import PriceBook

        prices = PriceBook(use_config=False)
    from gpuparity.comparison.history import resolve_priors

    priors = resolve_priors(a, b, floor, history, stores)
    for side in (a, b):
        read_throttle_infos(side, stores)
    core = compare_core(a, b, tolerance, level, floor, priors)
    servers = server_checks(a, b, cross_config)
    hold_servers(core, a, servers)
    hold_mixed(core, a, b)
    # the verdicts that survive Benjamini-Hochberg over every key: the headline's counts, trend's changes
    adjusted = fdr_verdicts(core.log_ratio, core.log_var, core.df, tolerance,
                            ~core.flagged & np.isfinite(core.log_var))
    table = result_rows(a, b, core, adjusted, prices, tolerance)
    order = table.order
    sa, sb, aa = compared_sides(a, b, core, prices, floor)
    if servers and not servers["same_server"] and aa.get("identical"):     # different servers are never A/A
        aa.update(identical=False, differences=[*aa.get("differences", []), "server identity"])
    doc_scope = scope(sa, sb)
    serving_floor = tuple(prior_spread(est) for est in (core.est_a, core.est_b))
    serving = serving_at_equal_interactivity(a, b, tolerance, floor=serving_floor, df=tuple(
        prior_df(est) for est in (core.est_a, core.est_b)), contended=bool(core.contended))
    for entry in serving if servers and servers["held"] else []:
        if entry.get("verdict"):
            entry.update(verdict="inconclusive", held=servers["held"])
    left_out = not_compared(a, b)
    units_line = units_note(left_out)         # keys left out for their units (comparison/units.py)
    return {
        "tolerance": tolerance, "level": level, "price_basis": getattr(prices, "basis", None),
        "run_spread_assumed": max([x for x in (sa["run_spread_assumed"], sb["run_spread_assumed"]) if x is not None],
                                  default=None),
        "run_spread": {"A": sa["run_spread"], "B": sb["run_spread"]},
        "rows": table.rows, "only_a": only_on(a, b), "only_b": only_on(b, a),
        "not_compared": left_out,
        "geomean": category_means(core, order, table.cols, table.factors, table.ranges, table.measured,
                                  adjusted[order], tolerance, level),
        "serving": serving, "servers": servers,
        "counts": fdr_counts(adjusted),
        "contended": [{"side": c["side"], "reasons": sorted({r for run in c["runs"] for r in run["reasons"]}),
                       "runs": [run["run_id"] for run in c["runs"]]} for c in core.contended],
        "scope": doc_scope,
        "sides": {"a": sa, "b": sb}, "aa": aa,
        "notes": server_check_lines({"servers": servers}) + document_notes(a, b, core, aa, table.watt_mixed,
                                                                            doc_scope) + ([units_line] if units_line else []),
    }


def hold_servers(core, a: Side, servers: dict | None) -> None:
    """Every serving verdict held at inconclusive where the servers differ in configuration (without
    --cross-config) or in their answers (comparison/server_checks.py), with the reason."""
    if not servers or not servers["held"] or not len(core.ia):
        return
    from gpuparity.comparison.server_checks import serving_keys
    from gpuparity.comparison.verdict import INCONCLUSIVE

    mask = serving_keys(a, core.ia)
    core.verdict = np.where(mask, INCONCLUSIVE, core.verdict)
    core.flagged = core.flagged | mask
    core.reasons = {**(core.reasons or {}), **{int(j): servers["held"] for j in np.nonzero(mask)[0].tolist()}}


def hold_mixed(core, a: Side, b: Side) -> None:
    """A serving key that a side served in several configurations (serving_compare.mixed_configs):
    its per-key figure pools them as if repeats, so its verdict is held, with the reason; the
    equal-interactivity table compares those configurations along each side's envelope."""
    from gpuparity.comparison.serving_compare import mixed_configs
    from gpuparity.comparison.verdict import INCONCLUSIVE

    ma, mb = mixed_configs(a), mixed_configs(b)
    if not (ma or mb) or not len(core.ia):
        return
    reasons = dict(core.reasons or {})
    for j, (i, k) in enumerate(zip(core.ia.tolist(), core.ib.tolist(), strict=True)):
        said = [f"{side} in {len(m)} configurations ({', '.join(m[:4])}{', ...' if len(m) > 4 else ''})"
                for side, m in (("A", ma.get(i)), ("B", mb.get(k))) if m]
        if said and j not in reasons:
            reasons[j] = ("served " + " and ".join(said) + ": compared along each side's envelope (serving at "
                          "equal interactivity), not pooled as repeats")
            core.verdict[j] = INCONCLUSIVE
            core.flagged[j] = True
    core.reasons = reasons


def compare_runs(runs_a: list[dict], runs_b: list[dict], tolerance: float = 0.05, floor: float | None = None) -> dict:
    """Compare run documents of platform A with those of platform B.

    Several runs on a side are pooled by key (the run is the unit; a run's trials are averaged
    first). No store history is read (compare_sides(history="auto") does). Returns {"rows",
    "only_a", "only_b", "not_compared", "geomean", "serving", "counts", "contended", "scope",
    "run_spread", "sides", "aa", "notes", ...}; each row has key, workload, category, params, dtype,
    unit, a_value, b_value, a_trials, b_trials, a_runs, b_runs, ratio, ci_low, ci_high, log_se, df,
    verdict, flags, held (why the verdict is held at inconclusive, None where it is not) and the
    normalised fields (a_/b_pct_peak, ratio_per_peak, ratio_per_dollar,
    ratio_per_watt, ...).
    """
    return compare_sides(side_from_runs(runs_a, "A"), side_from_runs(runs_b, "B"), tolerance, floor=floor)
