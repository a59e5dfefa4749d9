"""Build src/gpuparity/port/data/hipify_map.json from HIPIFY's Markdown API tables.

    python -m gpuparity.port.build_tables /work/shared/reference/hipify-api-tables

The runtime never reads the tables or torch: it loads the JSON this script writes.
torch.utils.hipify's table only fills gaps (names HIPIFY's tables do not list, and the
header map, which the tables lack); HIPIFY's per-API rows always win.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
OUT_NAME = "hipify_map.json"
LICENSE_NAME = "HIPIFY_LICENSE.txt"

# Table file -> (family, name of the column that holds the HIP-side name).
# Libraries with a hip* wrapper use it (drop-in); cuDNN uses the MIOpen column since
# hipDNN never shipped.
TABLES = [
    ("CUDA_Runtime_API_functions_supported_by_HIP.md", "runtime", "HIP"),
    ("CUDA_Driver_API_functions_supported_by_HIP.md", "driver", "HIP"),
    ("CUDA_Device_API_supported_by_HIP.md", "device", "HIP"),
    ("cuComplex_API_supported_by_HIP.md", "complex", "HIP"),
    ("CUBLAS_API_supported_by_HIP.md", "cublas", "HIP"),
    ("CURAND_API_supported_by_HIP.md", "curand", "HIP"),
    ("CUFFT_API_supported_by_HIP.md", "cufft", "HIP"),
    ("CUSPARSE_API_supported_by_HIP.md", "cusparse", "HIP"),
    ("CUSOLVER_API_supported_by_HIP.md", "cusolver", "HIP"),
    ("CUDNN_API_supported_by_MIOPEN.md", "cudnn", "MIOPEN"),
    ("CUB_API_supported_by_HIP.md", "cub", "HIP"),
    ("CUDA_RTC_API_supported_by_HIP.md", "nvrtc", "HIP"),
]
# --roc: the same libraries straight to the ROCm libraries (rocBLAS, rocSPARSE, rocRAND,
# rocSOLVER), as HIPIFY's -roc does. cuFFT has no ROC table (rocFFT's API is not cuFFT's).
ROC_TABLES = [
    ("CUBLAS_API_supported_by_ROC.md", "cublas"),
    ("CURAND_API_supported_by_ROC.md", "curand"),
    ("CUSPARSE_API_supported_by_ROC.md", "cusparse"),
    ("CUSOLVER_API_supported_by_ROC.md", "cusolver"),
]

HIPDNN_TABLE = "CUDNN_API_supported_by_HIP.md"

_ROW = re.compile(r"^\|`([^`]+)`\|")
_HEADER_CELL = re.compile(r"\*\*(\w+)\*\*")
_VERSION = re.compile(r"^\d+(\.\d+)*$")

# torch names that are PyTorch build hacks or too generic to rename in arbitrary code.
_TORCH_DENY_PREFIXES = ("CUSPARSE_COMPUTE_", "AT_", "nvml", "NVML_", "cusparseComputeType")
_TORCH_ALLOW = re.compile(r"^(cu|CU|nvtx|NVTX)[A-Za-z0-9_]*$")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _version(cell: str) -> str | None:
    cell = cell.strip()
    return cell if _VERSION.match(cell) else None


def parse_table(path: Path, family: str, target_column: str) -> dict[str, dict]:
    """Rows of one Markdown table file -> {cuda_name: entry}."""
    entries: dict[str, dict] = {}
    columns: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("|**"):
            columns = _HEADER_CELL.findall(line)
            continue
        if not _ROW.match(line) or not columns:
            continue
        cells = _cells(line)
        if len(cells) < len(columns):
            continue
        try:
            base = columns.index(target_column)
        except ValueError:
            continue
        cuda = cells[0].strip("`")
        hip = cells[base].strip("`") or None
        added = _version(cells[base + 1])
        entry: dict = {"family": family}
        if hip:
            entry["hip"] = hip
        if added:
            entry["added"] = added
        for key, offset in (("deprecated", 2), ("removed", 4)):
            v = _version(cells[base + offset])
            if v:
                entry[key] = v
        if cells[base + 5]:
            entry["experimental"] = True
        # No HIP name: no counterpart. A HIP name without a version: HIPIFY knows the
        # future name but no released HIP has it yet.
        if not hip or not added:
            entry["unsupported"] = True
        for key, offset in (("cuda_deprecated", 2), ("cuda_removed", 4)):
            v = _version(cells[offset])
            if v:
                entry[key] = v
        entries.setdefault(cuda, entry)
    return entries


def _torch_family(name: str) -> str:
    low = name.lower()
    for prefix, fam in (("cublas", "cublas"), ("curand", "curand"), ("cufft", "cufft"),
                        ("cusparse", "cusparse"), ("cusolver", "cusolver"), ("cudnn", "cudnn"),
                        ("nvtx", "nvtx"), ("cuda", "runtime"), ("cu", "driver")):
        if low.startswith(prefix):
            return fam
    return "runtime"


def torch_extras(known: set[str]) -> tuple[dict[str, dict], dict[str, str]]:
    """Gap fillers from torch.utils.hipify: identifiers HIPIFY's tables lack, and headers."""
    try:
        from torch.utils.hipify import cuda_to_hip_mappings as tm
    except Exception as exc:  # torch missing or broken: tables alone still work
        print(f"warning: torch hipify table unavailable ({exc}); headers from overrides only",
              file=sys.stderr)
        return {}, {}
    apis: dict[str, dict] = {}
    for table in (tm.CUDA_TYPE_NAME_MAP, tm.CUDA_IDENTIFIER_MAP, tm.CUDA_SPECIAL_MAP):
        for cuda, hip in table.items():
            hip = hip[0] if isinstance(hip, tuple) else hip
            if cuda in known or cuda in apis or not _TORCH_ALLOW.match(cuda):
                continue
            if cuda.startswith(_TORCH_DENY_PREFIXES) or not re.match(r"^[A-Za-z_]\w*$", hip):
                continue
            apis[cuda] = {"hip": hip, "family": _torch_family(cuda), "source": "torch"}
    headers: dict[str, str] = {}
    for cuda, hip in tm.CUDA_INCLUDE_MAP.items():
        cuda = cuda.replace("include ", "").strip("<>\"")
        hip = hip.replace("include ", "").strip("<>\"")
        if cuda.endswith((".h", ".hpp", ".cuh")):
            headers[cuda] = hip
    return apis, headers


def build(table_dir: Path) -> dict:
    if not table_dir.is_dir():
        raise SystemExit(f"error: {table_dir} is not a directory")
    apis: dict[str, dict] = {}
    for file_name, family, column in TABLES:
        path = table_dir / file_name
        if not path.exists():
            raise SystemExit(f"error: {path} missing")
        for cuda, entry in parse_table(path, family, column).items():
            apis.setdefault(cuda, entry)
    for file_name, family in ROC_TABLES:
        path = table_dir / file_name
        if not path.exists():
            raise SystemExit(f"error: {path} missing")
        for cuda, entry in parse_table(path, family, "ROC").items():
            if entry.get("hip") and cuda in apis:  # only names with a ROC counterpart
                roc = {k: v for k, v in entry.items() if k in ("hip", "added", "deprecated", "removed",
                                                                "unsupported")}
                roc["name"] = roc.pop("hip")
                apis[cuda]["roc"] = roc
    # cuDNN -> hipDNN (HIPIFY's default for cuDNN; hipDNN never shipped with ROCm): the name only
    for cuda, entry in parse_table(table_dir / HIPDNN_TABLE, "cudnn", "HIP").items():
        if entry.get("hip"):
            apis.setdefault(cuda, {"family": "cudnn", "unsupported": True})["hipdnn"] = entry["hip"]
    extra_apis, headers = torch_extras(set(apis))
    for cuda, entry in extra_apis.items():
        apis.setdefault(cuda, entry)
    return {
        "about": "CUDA->HIP API map built by gpuparity.port.build_tables from ROCm HIPIFY's "
                 "API tables (MIT, see HIPIFY_LICENSE.txt) plus gaps from torch.utils.hipify.",
        "apis": dict(sorted(apis.items())),
        "headers": dict(sorted(headers.items())),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table_dir", type=Path, help="folder with HIPIFY's *_supported_by_*.md tables")
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="output folder (default: package data)")
    args = parser.parse_args(argv)
    data = build(args.table_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / OUT_NAME
    out.write_text(json.dumps(data, separators=(",", ":"), sort_keys=False) + "\n", encoding="utf-8")
    licence = args.table_dir / "LICENSE.txt"
    if licence.exists():
        text = ("HIPIFY API tables (source of hipify_map.json), "
                "https://github.com/ROCm/HIPIFY\n\n" + licence.read_text(encoding="utf-8"))
        (args.out / LICENSE_NAME).write_text(text, encoding="utf-8")
    else:
        print("warning: LICENSE.txt not found beside the tables", file=sys.stderr)
    n_sup = sum(1 for e in data["apis"].values() if not e.get("unsupported"))
    n_roc = sum(1 for e in data["apis"].values() if "roc" in e)
    print(f"wrote {out} ({out.stat().st_size // 1024} KiB): {len(data['apis'])} APIs, "
          f"{n_sup} with a HIP counterpart, {n_roc} with a ROC library one, {len(data['headers'])} headers")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
