"""GPU-hour prices: the shipped price book, a user config file, and command-line overrides.

Precedence (last wins): price book row for the chosen basis < config file `[prices]` < `--price`.
Keys are spec ids ('mi300x', 'h100-sxm', 'cpu'); loose names ('h100') are resolved to spec ids.
"""

from __future__ import annotations

import csv
import os
from functools import lru_cache
from importlib import resources

from gpuparity.errors import UserError

BASES = ("hyperscaler", "neocloud", "3yr-rental", "on-demand-typical")
# One consistent source (the SemiAnalysis TCO model) that prices every part in the book.
DEFAULT_BASIS = "neocloud"


@lru_cache(maxsize=1)
def price_book() -> dict[tuple[str, str], dict]:
    """{(spec id, basis): {"usd_per_gpu_hour", "source", "date"}} for rows that carry a price."""
    text = resources.files("gpuparity.platform").joinpath("data/price_book.csv").read_text()
    out = {}
    for row in csv.DictReader(text.splitlines()):
        if row.get("usd_per_gpu_hour"):
            out[(row["gpu_id"], row["basis"])] = {
                "usd_per_gpu_hour": float(row["usd_per_gpu_hour"]), "source": row["source"], "date": row["date"],
            }
    return out


def config_path() -> str:
    from platformdirs import user_config_dir

    return os.path.join(user_config_dir("gpuparity"), "config.toml")


def _canonical(name: str) -> str:
    from gpuparity.platform.specs import lookup

    name = name.strip().lower()
    if name == "cpu":
        return name
    spec = lookup(name)
    return spec["id"] if spec else name


def _known(spec_id: str) -> bool:
    from gpuparity.platform.specs import all_specs

    return spec_id in all_specs() or any(k[0] == spec_id for k in price_book())


def _price(value, origin: str) -> float:
    try:
        price = float(value)
    except (TypeError, ValueError):
        raise UserError(f"{origin}: price must be a number of dollars per GPU-hour, got {value!r}") from None
    if not price > 0 or price != price or price == float("inf"):
        raise UserError(f"{origin}: price must be a positive number, got {value!r}")
    return price


def config_prices(path: str | None = None) -> dict[str, float]:
    """The `[prices]` table of the user config file ({} when there is no file)."""
    path = path or config_path()
    if not os.path.exists(path):
        return {}
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    from gpuparity.validate import open_regular

    try:
        with open_regular(path, "TOML config") as fh:           # a FIFO or device: refused, never read
            data = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"{path}: not a readable TOML config ({exc})") from None
    table = data.get("prices") or {}
    if not isinstance(table, dict):
        raise UserError(f"{path}: [prices] must be a table of gpu = dollars per hour")
    return {_canonical(k): _price(v, f"{path} [prices] {k}") for k, v in table.items()}


def parse_price_args(items: list[str] | None) -> dict[str, float]:
    """`--price mi300x=1.75` (repeatable) -> {"mi300x": 1.75}."""
    out = {}
    for item in items or []:
        if "=" not in item:
            raise UserError(f"--price takes gpu=dollars_per_hour, got '{item}'")
        name, value = item.split("=", 1)
        key = _canonical(name)
        if key != "cpu" and not _known(key):
            raise UserError(f"--price {name.strip()[:40]}: no GPU of that name (a spec id such as mi300x or "
                            "h100-sxm: `gpuparity specs` lists them)")
        out[key] = _price(value, f"--price {name.strip()}")
    return out


class PriceBook:
    """Resolves a spec id to ($ per GPU-hour, where that figure came from)."""

    def __init__(self, basis: str = DEFAULT_BASIS, overrides: dict[str, float] | None = None,
                 use_config: bool = True):
        if basis not in BASES:
            raise UserError(f"unknown price basis '{basis}'; choose one of {', '.join(BASES)}")
        self.basis = basis
        self.config = config_prices() if use_config else {}
        self.overrides = dict(overrides or {})

    def price(self, spec_id: str | None) -> tuple[float | None, str]:
        if not spec_id:
            return None, "no spec: price unknown"
        if spec_id in self.overrides:
            return self.overrides[spec_id], "--price"
        if spec_id in self.config:
            return self.config[spec_id], f"config {config_path()}"
        row = price_book().get((spec_id, self.basis))
        if row:
            return row["usd_per_gpu_hour"], f"price book ({self.basis}, {row['date']}): {row['source']}"
        return None, f"no {self.basis} price for {spec_id} (set one with --price {spec_id}=USD)"

    def factor_range(self, spec_a: str | None, spec_b: str | None) -> tuple[float, float] | None:
        """(lowest, highest) price A / price B with both sides on one basis (a price a user set
        holds on every basis): per-dollar ratios scale by it. None: a price is unknown."""
        per = []
        for basis in BASES:
            pa, pb = (self.overrides.get(s) or self.config.get(s) or (price_book().get((s, basis)) or {}).get(
                "usd_per_gpu_hour") for s in (spec_a, spec_b))
            if pa and pb:
                per.append(pa / pb)
        return (min(per), max(per)) if per else None


def usd_per_million_tokens(usd_per_hour: float | None, tokens_per_s: float | None) -> float | None:
    if not usd_per_hour or not tokens_per_s:
        return None
    return usd_per_hour / (tokens_per_s * 3600.0) * 1e6
