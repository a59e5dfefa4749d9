"""The parts a claim names: a part with a spec row, an announced part not yet released (the claim is a
projection: not testable), or a name nothing knows (that claim is refused, the others are checked);
and the like-for-like generation pairs a CUDA-vs-ROCm claim is read on (both tables ship as data)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources


def _data(name: str) -> dict:
    return json.loads(resources.files("gpuparity.evidence").joinpath(f"data/{name}").read_text())


def _key(name: str) -> str:
    return re.sub(r"[\s_-]+", "", str(name).lower())


@lru_cache(maxsize=1)
def _unreleased() -> dict[str, dict]:
    out = {}
    for part in _data("unreleased_parts.json")["parts"]:
        for alias in [part["name"], *part["aliases"]]:
            out[_key(alias)] = part
    return out


def unreleased(name: str | None) -> dict | None:
    """The announced-part entry a name refers to ('MI450', 'Rubin Ultra'), else None. A name the spec
    data knows is not unreleased here: its (provisional) figures and any results can test it."""
    from gpuparity.platform.specs import lookup

    if not name or lookup(name):
        return None
    return _unreleased().get(_key(name))


@lru_cache(maxsize=1)
def generation_pairs() -> list[tuple[str, str, str]]:
    """[(CUDA spec id, ROCm spec id, what the pair is)], oldest first."""
    return [tuple(p) for p in _data("generation_pairs.json")["pairs"]]


def pair_name(cuda: str, rocm: str) -> str:
    from gpuparity.platform.specs import all_specs

    def short(spec_id: str) -> str:
        return spec_id.split("-")[0].upper()

    specs = all_specs()
    return f"{short(specs[cuda]['id'])}/{short(specs[rocm]['id'])}"
