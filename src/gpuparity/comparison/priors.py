"""The run-to-run spread a one-run side assumes (its Prior), and limma's moderation of the
variances a side measures, robustly.

Where a category's spread comes from, first match wins:
- --run-spread X or GPUPARITY_RUN_SPREAD: "set", taken as known (infinite degrees of freedom);
- the store's history of the same product, stack, driver and torch over other occasions
  (comparison/history.py): a shared run variance, a key x run variance per key (its own history
  variance, moderated toward the category), the trial variance, each with its df;
- else the per-category default (results/figure.py RUN_SPREAD_DEFAULTS) with DEFAULT_DF prior
  degrees of freedom: the spread is a guess, so a one-run interval is a t with 2 df, not a z.
  With 2 df a one-run A/A comparison reads faster or slower on at most 5% of keys up to 2.5x the
  default spread (the 15% world of tests/test_calibration.py at the 8% kernel default); 3 df
  would already fail at 2x.
Both sides that take the same default, or one history, share one estimate: `ident` says which
(estimate.pair_df counts its degrees of freedom once).

Moderation (`squeeze`, limma's fitFDist by moments of log s2 and squeezeVar): a group's (a
category's) key variances s2 with df d give a prior s0^2 with d0 degrees of freedom and each key
the posterior (d0 s0^2 + d s2) / (d0 + d). Robust, in the spirit of limma's robust=TRUE: keys
whose variance is far above the rest (upper-tail F(d, d0) test, Benjamini-Hochberg at OUTLIER_Q
within the group, iterated) are left out of the prior's fit and keep their own variance and df:
a few noisy keys are not shrunk toward the quiet ones, and do not inflate the quiet ones' prior.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

DEFAULT_DF = 2.0           # prior degrees of freedom of a default spread (see the module notes)


@dataclass
class Prior:
    """The run-level spread assumed for a category of a side that has one run of each key."""

    shared: float               # variance of the run effect shared by the category's keys
    shared_df: float = math.inf
    key: float = 0.0            # variance of the key x run interaction (keys the history did not see)
    key_df: float = math.inf
    source: str = "default"     # default | history | set
    text: str = ""              # where it came from, in words
    runs: int = 0               # earlier runs behind it (history: occasions)
    trial: float = 0.0          # trial-to-trial variance inside a run (history), for a one-trial key
    trial_df: float = math.inf
    keys: dict = field(default_factory=dict)    # key -> (its own moderated key x run variance, df)
    ident: str = ""             # priors with one ident are one estimate (both sides' default, one history)

    @property
    def spread(self) -> float:
        return math.sqrt(self.shared + self.key)

    @property
    def df(self) -> float:
        """Degrees of freedom of shared + key (Satterthwaite; infinite when both are known)."""
        parts = [(v, d) for v, d in ((self.shared, self.shared_df), (self.key, self.key_df)) if v > 0]
        den = sum(v * v / d for v, d in parts if math.isfinite(d) and d > 0)
        return (sum(v for v, _ in parts) ** 2 / den) if den > 0 else math.inf


def default_prior(category: str, why: str) -> Prior:
    from gpuparity.results.figure import run_spread_default

    f = run_spread_default(category)
    return Prior(f * f, shared_df=DEFAULT_DF, source="default", ident=f"default:{category}:{f:g}",
                 text=f"assumed {100 * f:g}% with {DEFAULT_DF:g} df ({why})")


def set_prior(f: float, how: str) -> Prior:
    return Prior(f * f, source="set", text=f"{100 * f:g}% set by {how}", ident=f"set:{f:g}")


def default_priors(side, floor: float | None = None, found: dict | None = None,
                   why: str = "no history") -> dict[str, Prior]:
    """The Prior of every category of a side that cannot measure its run-to-run spread:
    --run-spread (`floor`) or GPUPARITY_RUN_SPREAD, else what history `found`, else the default."""
    from gpuparity.comparison.estimate import needs_prior
    from gpuparity.results.figure import run_spread_env

    env = run_spread_env()
    out = {}
    for cat in needs_prior(side):
        if floor is not None or env is not None:
            out[cat] = set_prior(floor if floor is not None else env,
                                 "--run-spread" if floor is not None else "GPUPARITY_RUN_SPREAD")
        elif found and cat in found:
            out[cat] = found[cat]
        else:
            out[cat] = default_prior(cat, why)
    return out
