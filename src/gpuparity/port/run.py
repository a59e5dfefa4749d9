"""`gpuparity port`: walk SRC, translate, find hazards, score, write DST or a diff, and --check."""

from __future__ import annotations

import difflib
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from gpuparity.errors import UserError
from gpuparity.port import check as checking
from gpuparity.port import mappings
from gpuparity.port.cmake import translate_cmake
from gpuparity.port.hazards import Hazard, find_hazards
from gpuparity.port.score import Score, score_uses, tree_score
from gpuparity.port.translate import ApiUse, Options, Rewrite, translate_source
from gpuparity.port.walk import Skip, SourceFile, find_sources


@dataclass
class FileReport:
    rel: str
    language: str
    engine: str
    lines: int
    score: Score
    uses: list[ApiUse]
    hazards: list[Hazard]
    rewrites: list[Rewrite]
    changed: bool
    diff: str = ""
    check: checking.CheckResult | None = None
    written: str | None = None

    @property
    def unsupported(self) -> list[ApiUse]:
        return [u for u in self.uses if not u.supported]


@dataclass
class PortReport:
    src: str
    dst: str | None
    hip_version: str
    launch: str
    files: list[FileReport] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    toolchain: str = ""
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def score(self) -> Score:
        return tree_score(f.score for f in self.files)

    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files)

    @property
    def hazards(self) -> list[tuple[str, Hazard]]:
        return [(f.rel, h) for f in self.files for h in f.hazards]

    def check_counts(self) -> dict[str, int]:
        counts = {s: 0 for s in checking.STATUSES}
        for f in self.files:
            if f.check is not None:
                counts[f.check.status] += 1
        return counts


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def validate_paths(src: Path, dst: Path | None) -> tuple[Path, Path | None]:
    if not src.exists() and not src.is_symlink():
        raise UserError(f"SRC does not exist: {src}")
    src_real = Path(os.path.realpath(src))
    if dst is None:
        return src_real, None
    dst_real = Path(os.path.realpath(dst))
    if src_real.is_dir():
        if _inside(dst_real, src_real):
            raise UserError(f"DST ({dst}) must not be SRC or inside SRC ({src})")
        if _inside(src_real, dst_real):
            raise UserError(f"DST ({dst}) must not contain SRC ({src})")
        if dst_real.exists() and not dst_real.is_dir():
            raise UserError(f"DST exists and is not a folder: {dst}")
    else:
        if dst_real == src_real:
            raise UserError("DST must differ from SRC")
    return src_real, dst_real


def _make_parent(folder: Path, root: Path) -> bool:
    """mkdir -p folder, but only if its deepest existing ancestor resolves inside root."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not _inside(Path(os.path.realpath(existing)), root):
        return False
    folder.mkdir(parents=True, exist_ok=True)
    return True


def _destination(out_root: Path | None, sf: SourceFile, src_real: Path, single: bool) -> Path | str | None:
    """Where a translated file goes, None for a dry run, or why it must not be written."""
    if out_root is None:
        return None
    if single:  # one file: DST is the output file, or a folder to put it in
        out = out_root / sf.path.name if out_root.is_dir() else out_root
        out.parent.mkdir(parents=True, exist_ok=True)
    else:
        out = out_root / sf.rel
        if not _make_parent(out.parent, out_root):
            return "output folder resolves outside DST (symlink in DST); not written"
    if out.is_symlink():
        return "a symlink already sits at the DST path; not overwritten"
    target = Path(os.path.realpath(out.parent)) / out.name
    if target == src_real or (not single and _inside(target, src_real)):
        return "output would overwrite a file in SRC; not written"
    return out


def translate_file(sf: SourceFile, opts: Options, want_diff: bool = False) -> tuple[FileReport, str]:
    """Report for one source (with its diff when asked) and its translated text."""
    if sf.language == "cmake":
        tr = translate_cmake(sf.text)
        hazards: list[Hazard] = []
    else:
        tr = translate_source(sf.text, opts)
        hazards = find_hazards(sf.text, tr.tokens, opts.hip_version)
        tr.tokens = []  # free memory: large trees
    return FileReport(
        rel=sf.rel, language=sf.language, engine=tr.engine, lines=len(sf.text.splitlines()),
        score=score_uses(tr.uses), uses=tr.uses, hazards=hazards, rewrites=tr.rewrites,
        changed=tr.text != sf.text, written=None,
        diff=unified_diff(sf.rel, sf.text, tr.text) if want_diff and tr.text != sf.text else "",
    ), tr.text


_PARALLEL_MIN_FILES = 16
_PARALLEL_MIN_BYTES = 2 * 1024 * 1024


def _translate_all(files: list[SourceFile], opts: Options, jobs: int | None, want_diff: bool):
    """translate_file over all files, in order; large trees use a process pool (the work is
    CPU-bound Python, so threads would not help)."""
    jobs = jobs or os.cpu_count() or 1
    big = len(files) >= _PARALLEL_MIN_FILES and sum(len(f.text) for f in files) >= _PARALLEL_MIN_BYTES
    if jobs < 2 or not big:
        for sf in files:
            yield translate_file(sf, opts, want_diff)
        return
    from concurrent.futures import ProcessPoolExecutor

    n = len(files)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(translate_file, files, [opts] * n, [want_diff] * n, chunksize=4)


def unified_diff(rel: str, before: str, after: str, context: int = 3) -> str:
    """`diff -u` text. C/C++ translation never adds or removes lines, so changed lines pair
    up by index and hunks are cut directly; difflib (much slower) handles the rest (CMake)."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    if len(old) != len(new):
        return "".join(difflib.unified_diff(old, new, fromfile=f"a/{rel}", tofile=f"b/{rel}"))
    changed = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
    if not changed:
        return ""
    out = [f"--- a/{rel}\n", f"+++ b/{rel}\n"]
    groups: list[list[int]] = [[changed[0]]]
    for i in changed[1:]:
        if i - groups[-1][-1] - 1 > 2 * context:  # unchanged lines between hunks
            groups.append([i])
        else:
            groups[-1].append(i)

    def line(text: str) -> str:
        return text if text.endswith("\n") else text + "\n\\ No newline at end of file\n"

    for group in groups:
        lo, hi = max(0, group[0] - context), min(len(old), group[-1] + context + 1)
        size = hi - lo
        out.append(f"@@ -{lo + 1},{size} +{lo + 1},{size} @@\n")
        members = set(group)
        k = lo
        while k < hi:
            if k not in members:
                out.append(" " + line(old[k]))
                k += 1
                continue
            run_end = k
            while run_end < hi and run_end in members:
                run_end += 1
            out.extend("-" + line(old[j]) for j in range(k, run_end))
            out.extend("+" + line(new[j]) for j in range(k, run_end))
            k = run_end
    return "".join(out)


def port(src: Path, dst: Path | None = None, *, hip_version: str | None = None, launch: str = "chevron",
         check: bool = False, engine: str = "auto", want_diff: bool = True,
         toolchain: checking.Toolchain | None = None, jobs: int | None = None) -> PortReport:
    """Port SRC (a folder or one file). Without dst it is a dry run (diffs only).
    jobs: worker processes for large trees (default: one per CPU)."""
    started = time.perf_counter()
    if launch not in ("chevron", "ggl"):
        raise UserError(f"--launch must be 'chevron' or 'ggl', not {launch!r}")
    src_real, dst_real = validate_paths(src, dst)
    target = mappings.parse_version(hip_version or mappings.NEWEST_HIP)
    notes: list[str] = []
    tc = None
    if check:
        tc = toolchain or checking.detect()
        if tc.hip_version:
            if hip_version and mappings.parse_version(hip_version)[:2] != tc.hip_version[:2]:
                notes.append(f"--check targets the installed hipcc (HIP {mappings.version_text(tc.hip_version)}),"
                             f" not --hip-version {hip_version}")
            target = tc.hip_version
        elif tc.hipcc is None:
            notes.append("hipcc not found: --check compiles nothing (install it, e.g. apt-get install hipcc)")
    opts = Options(hip_version=target, launch=launch, engine=engine)
    report = PortReport(str(src), str(dst) if dst else None, mappings.version_text(target), launch,
                        toolchain=tc.describe() if tc else "", notes=notes)
    files, skips = find_sources(src_real)
    report.skipped = skips
    if not src_real.is_dir() and not files:
        raise UserError(f"cannot port {src}: {skips[0].reason}")
    if dst_real is not None and src_real.is_dir():
        try:
            dst_real.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"cannot create DST {dst}: {exc.strerror or exc}") from exc

    single = not src_real.is_dir()
    tmp_ctx = tempfile.TemporaryDirectory(prefix="gpuparity-port-") if (check and dst_real is None) else None
    out_root = dst_real if dst_real is not None else (Path(tmp_ctx.name) if tmp_ctx else None)
    pairs: list[tuple[str, Path, Path]] = []
    try:
        diffs = want_diff and dst_real is None
        for sf, (fr, new_text) in zip(files, _translate_all(files, opts, jobs, diffs), strict=True):
            try:
                out = _destination(out_root, sf, src_real, single)
                if out is not None and not isinstance(out, str):
                    with open(out, "w", encoding="utf-8", newline="") as fh:
                        fh.write(new_text)
            except OSError as exc:
                out = f"cannot write: {exc.strerror or exc}"
            if isinstance(out, str):
                report.skipped.append(Skip(sf.rel, out))
            elif out is not None:
                fr.written = str(out) if dst_real is not None else None
                if sf.language == "cuda":
                    pairs.append((sf.rel, sf.path, out))
            report.files.append(fr)
        if check and tc is not None:
            include_root = pairs[0][2].parent if single and pairs else out_root
            results = checking.check_files(tc, pairs, src_real.parent if single else src_real, include_root)
            for f in report.files:
                f.check = results.get(f.rel) or checking.CheckResult(
                    checking.SKIPPED, "CMake file" if f.language == "cmake" else "not written")
    finally:
        if tmp_ctx is not None:
            tmp_ctx.cleanup()
    report.seconds = time.perf_counter() - started
    return report
