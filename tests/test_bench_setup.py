"""The bench scripts' set-up stays valid input: a bench whose clones import refuses measures nothing
(bench/store_scale.py broke that way once figures were recomputed on import)."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

from gpuparity.results.document import validate_run

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load_bench(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_store_scale_clones_import_as_they_are_on_every_gpu_they_name():
    bench = load_bench("store_scale")
    with gzip.open(bench.TEMPLATE, "rt") as fh:
        template = json.load(fh)
    texts = bench.clone_texts(template)
    assert len(texts) == len(bench.NAMED) + len(bench.FILLERS)
    for name, text in texts.items():
        doc = json.loads(text.replace("RUNID", "r1").replace("STARTED", "2026-01-01T00:00:00+00:00")
                         .replace("HOSTNAME", "box"))
        stored = validate_run(doc, name)            # refused (UserError) if any stated figure is off
        assert "recomputed" not in stored and stored["spec_id"] != template["spec_id"]
        assert not any("recomputed" in (r.get("flags") or []) for r in stored["results"])
        # % of peak follows the clone's GPU, not the CPU the template ran on
        ok = [r for r in stored["results"] if r["status"] == "ok" and (r.get("derived") or {}).get("pct_peak")]
        assert ok and all(r["derived"]["pct_peak"] < 100 for r in ok)
