"""Cut the MLPerf Training v5.0 / v5.1 LLM archives (../shared/reference/mlperf_training_v5.*_llm_full.tar.xz)
to the test fixture mlperf_training_llm_8gpu.tar.xz: every single-node 8-accelerator system of the parts
the generation pairs name (H100, H200, B200, B300, MI300X, MI325X, MI350X, MI355X), its systems/*.json
unchanged, its scaling.json unchanged, and each result_*.txt cut to the MLLOG lines a score reads
(run_start, run_stop, submission_benchmark), as written. Run: python tests/data/cut_mlperf_training.py"""

import io
import json
import re
import sys
import tarfile
from pathlib import Path

PARTS = re.compile(r"H100|H200|B200|B300|MI300X|MI325X|MI350X|MI355X")
KEYS = ('"run_start"', '"run_stop"', '"submission_benchmark"')
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference"


def cut(archives: list[Path], out: Path) -> None:
    members: dict[str, bytes] = {}
    for archive in archives:
        with tarfile.open(archive, "r:xz") as tar:
            for m in tar.getmembers():
                if m.isfile():
                    members[m.name] = tar.extractfile(m).read()
    keep: dict[str, bytes] = {}
    for name, data in members.items():
        parts = name.split("/")
        if len(parts) != 4 or parts[2] != "systems" or not name.endswith(".json"):
            continue
        desc = json.loads(data)
        if not PARTS.search(str(desc.get("accelerator_model_name"))):
            continue
        if int(desc.get("number_of_nodes") or 0) != 1 or int(desc.get("accelerators_per_node") or 0) != 8:
            continue
        prefix = f"{parts[0]}/{parts[1]}/results/{parts[3][:-5]}/"
        results = {n: d for n, d in members.items() if n.startswith(prefix)}
        if not results:
            continue
        keep[name] = data
        for n, d in results.items():
            if Path(n).name.startswith("result_"):
                lines = d.decode("utf-8", "replace").splitlines(keepends=True)
                d = "".join(line for line in lines if ":::MLLOG" in line and any(k in line for k in KEYS)).encode()
            keep[n] = d
    with tarfile.open(out, "w:xz", preset=9) as tar:
        for name in sorted(keep):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(keep[name]), 0, 0o644
            tar.addfile(info, io.BytesIO(keep[name]))


if __name__ == "__main__":
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED
    cut([src / f"mlperf_training_v{r}_llm_full.tar.xz" for r in ("5.0", "5.1")],
        Path(__file__).parent / "mlperf_training_llm_8gpu.tar.xz")
