"""`gpuparity port`: walk SRC, translate, find hazards, score, write DST or a diff, and --check.

Outputs are written to a new file that then replaces the one at the DST path (rename), never
through it: a DST file that is a hard link to a source (`cp -al src dst`) is replaced, and the
source keeps its bytes.
"""

from __future__ import annotations

import difflib
import gc
import os
import tempfile
import time
from dataclasses import dataclass, field
from itertools import compress, count
from operator import ne
from pathlib import Path

from gpuparity.errors import UserError
from gpuparity.port import check as checking
from gpuparity.port import mappings
from gpuparity.port.cmake import translate_cmake
from gpuparity.port.hazards import BLOCKS_BUILD, SEVERITIES, Hazard, find_hazards
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

    @property
    def needs_human(self) -> int:
        """Places a person must look at: uses with no counterpart, and every hazard."""
        return self.score.unsupported + len(self.hazards)

    def by_family(self) -> dict[str, dict[str, int]]:
        """CUDA references converted / not converted per API family (HIPIFY's statistics)."""
        out: dict[str, dict[str, int]] = {}
        for u in self.uses:
            row = out.setdefault(u.family or "other", {"converted": 0, "not_converted": 0})
            row["converted" if u.supported else "not_converted"] += 1
        return dict(sorted(out.items()))


@dataclass
class PortReport:
    src: str
    dst: str | None
    hip_version: str
    launch: str
    roc: bool = False
    examine: bool = False
    files: list[FileReport] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    toolchain: str = ""
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    compile: checking.CompileRate | None = None  # --check: the measured compile pass rate
    run: object = None  # --run: run_programs.RunReport (built and run against HIP-CPU)

    @property
    def score(self) -> Score:
        return tree_score(f.score for f in self.files)

    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files)

    @property
    def hazards(self) -> list[tuple[str, Hazard]]:
        return [(f.rel, h) for f in self.files for h in f.hazards]

    @property
    def needs_human(self) -> int:
        return sum(f.needs_human for f in self.files)

    def severity_counts(self) -> dict[str, int]:
        counts = {s: 0 for s in SEVERITIES}
        for _, h in self.hazards:
            counts[h.severity] += 1
        return counts

    def by_family(self) -> dict[str, dict[str, int]]:
        total: dict[str, dict[str, int]] = {}
        for f in self.files:
            for family, row in f.by_family().items():
                cell = total.setdefault(family, {"converted": 0, "not_converted": 0})
                cell["converted"] += row["converted"]
                cell["not_converted"] += row["not_converted"]
        return dict(sorted(total.items()))

    def check_counts(self) -> dict[str, int]:
        counts = {s: 0 for s in checking.STATUSES}
        for f in self.files:
            if f.check is not None:
                counts[f.check.status] += 1
        return counts


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def validate_paths(src: Path, dst: Path | None) -> tuple[Path, Path | None]:
    try:
        missing = not src.exists() and not src.is_symlink()
    except OSError as exc:
        raise UserError(f"cannot read SRC {src}: {exc.strerror or exc}") from exc
    if missing:
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


def write_atomically(path: Path, text: str) -> None:
    """Write a new file and rename it over path: never through an existing file (a hard link
    to a source would carry the write into the source). Bytes that were not UTF-8 in the
    source (surrogate escapes) go out as they came in."""
    tmp = path.parent / f".{path.name}.gpuparity-{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def translate_file(sf: SourceFile, opts: Options, want_diff: bool = False) -> tuple[FileReport, str]:
    """Report for one source (with its diff when asked) and its translated text."""
    collecting = gc.isenabled()
    gc.disable()  # a file makes some 20,000 token tuples, freed by reference counts: the collector
    try:          # would walk them dozens of times for nothing
        return _translate_file(sf, opts, want_diff)
    finally:
        if collecting:
            gc.enable()


def _translate_file(sf: SourceFile, opts: Options, want_diff: bool) -> tuple[FileReport, str]:
    if sf.language == "cmake":
        tr = translate_cmake(sf.text, roc=opts.roc)
        hazards: list[Hazard] = []
    else:
        rel = sf.rel.lower()
        tr = translate_source(sf.text, opts, c_only=rel.endswith(".c"), cuda_source=rel.endswith((".cu", ".cuh")))
        hazards = find_hazards(sf.text, tr.tokens, opts.hip_version, tr.columns)
        tr.tokens, tr.columns = [], None  # free memory: large trees
    blocking = sum(h.severity == BLOCKS_BUILD for h in hazards)
    return FileReport(
        rel=sf.rel, language=sf.language, engine=tr.engine, lines=len(sf.text.splitlines()),
        score=score_uses(tr.uses, blocking), uses=tr.uses, hazards=hazards, rewrites=tr.rewrites,
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

    mappings.load_table()  # before the workers start: forked ones share it instead of each parsing it
    n = len(files)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(translate_file, files, [opts] * n, [want_diff] * n, chunksize=4)


def unified_diff(rel: str, before: str, after: str, context: int = 3) -> str:
    """`diff -u` text. C/C++ translation never adds or removes lines, so changed lines pair
    up by index and hunks are cut directly; difflib (much slower) handles the rest (CMake)."""
    from gpuparity.validate import terminal_safe

    rel = terminal_safe(rel)        # a file name's control or bidi characters are shown, never obeyed
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    if len(old) != len(new):
        return "".join(difflib.unified_diff(old, new, fromfile=f"a/{rel}", tofile=f"b/{rel}"))
    changed = list(compress(count(), map(ne, old, new)))
    if not changed:
        return ""
    for lines in (old, new):  # only the last line can lack its newline: say so, as diff does
        if not lines[-1].endswith("\n"):
            lines[-1] += "\n\\ No newline at end of file\n"
    out = [f"--- a/{rel}\n", f"+++ b/{rel}\n"]
    groups: list[list[int]] = [[changed[0]]]
    for i in changed[1:]:
        if i - groups[-1][-1] - 1 > 2 * context:  # unchanged lines between hunks
            groups.append([i])
        else:
            groups[-1].append(i)
    for group in groups:
        lo, hi = max(0, group[0] - context), min(len(old), group[-1] + context + 1)
        out.append(f"@@ -{lo + 1},{hi - lo} +{lo + 1},{hi - lo} @@\n")
        k, g = lo, 0
        while k < hi:
            first = group[g] if g < len(group) else hi  # the next changed line
            out.extend([" " + s for s in old[k:first]])
            if first >= hi:
                break
            end = first
            while g < len(group) and group[g] == end:  # a run of changed lines
                g += 1
                end += 1
            out.extend(["-" + s for s in old[first:end]])
            out.extend(["+" + s for s in new[first:end]])
            k = end
    return "".join(out)


def port(src: Path, dst: Path | None = None, *, hip_version: str | None = None, launch: str = "chevron",
         check: bool = False, engine: str = "auto", want_diff: bool = True, roc: bool = False,
         examine: bool = False, toolchain: checking.Toolchain | None = None, jobs: int | None = None,
         headers: str | None = None, hipify: dict | None = None) -> PortReport:
    """Port SRC (a folder or one file). Without dst it is a dry run (diffs only).
    roc: cuBLAS/cuSPARSE/cuRAND/cuSOLVER straight to the ROCm libraries.
    examine: count what would be converted; write nothing, make no diff.
    jobs: worker processes for large trees (default: one per CPU).
    hip_version None: the installed hipcc's HIP, else the newest. headers: mappings.LAYOUTS
    (None: the libraries' folders when the target is the installed HIP, else HIPIFY's names).
    hipify: HIPIFY's conventions as Options fields (experimental, dnn, defines, skip_excluded,
    hip_data_types), as the CLI's options of those names give them."""
    collecting = gc.isenabled()
    gc.disable()  # the reports (a tree's worth of uses) hold no cycles: collecting meanwhile only costs time
    try:
        return _port(src, dst, hip_version=hip_version, launch=launch, check=check, engine=engine,
                     want_diff=want_diff and not examine, roc=roc, examine=examine, toolchain=toolchain,
                     jobs=jobs, headers=headers, hipify=hipify or {})
    except PermissionError as exc:  # anything not caught where it happens: one line, no traceback
        raise UserError(f"cannot port {src}: {exc.strerror or exc} ({exc.filename or src})") from exc
    finally:
        if collecting:
            gc.enable()


def _port(src: Path, dst: Path | None, *, hip_version: str | None, launch: str, check: bool, engine: str,
          want_diff: bool, roc: bool, examine: bool, toolchain: checking.Toolchain | None,
          jobs: int | None, headers: str | None, hipify: dict) -> PortReport:
    started = time.perf_counter()
    if launch not in ("chevron", "ggl"):
        raise UserError(f"--launch must be 'chevron' or 'ggl', not {launch!r}")
    if examine and (dst is not None or check):
        raise UserError("--examine writes and compiles nothing: drop --out / --check")
    src_real, dst_real = validate_paths(src, dst)
    notes: list[str] = []
    target, tc, installed = _target(hip_version, check, toolchain, notes)
    headers = headers or ("folder" if installed else "hipify")
    if headers not in mappings.LAYOUTS:
        raise UserError(f"--headers must be one of {', '.join(mappings.LAYOUTS)}, not {headers!r}")
    opts = Options(hip_version=target, launch=launch, engine=engine, roc=roc, headers=headers, **hipify)
    report = PortReport(str(src), str(dst) if dst else None, mappings.version_text(target), launch,
                        roc=roc, examine=examine, toolchain=tc.describe() if tc else "", notes=notes)
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
                    write_atomically(out, new_text)
            except OSError as exc:
                import errno

                if exc.errno in (errno.ENOSPC, errno.EDQUOT):       # a full disk: every later file would fail too
                    kept = sum(1 for f in report.files if f.written)
                    raise UserError(f"cannot write {sf.rel}: the disk is full ({exc.strerror}); the {kept} files "
                                    "written before it are kept: free some room and port again") from None
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
            report.compile = checking.compile_rate([f.check for f in report.files if f.check], tc.describe())
    finally:
        if tmp_ctx is not None:
            tmp_ctx.cleanup()
    report.notes.extend(_target_notes(report, target, roc))
    report.seconds = time.perf_counter() - started
    return report


def _target(hip_version: str | None, check: bool, toolchain: checking.Toolchain | None,
            notes: list[str]) -> tuple[tuple[int, ...], checking.Toolchain | None, bool]:
    """(target HIP, the toolchain --check compiles with, whether the target is the installed
    HIP). --check and a missing --hip-version target the installed hipcc, so that the output
    builds on the machine it was made on; without a hipcc, the newest HIP."""
    asked = mappings.parse_version(hip_version) if hip_version else None
    tc = None
    if check:
        tc = toolchain or checking.detect()
        if tc.hipcc is None:
            notes.append("hipcc not found: --check compiles nothing (install it, e.g. apt-get install hipcc)")
    elif asked is None:
        tc = toolchain or checking.detect(nvcc=False)
    installed = tc.hip_version if tc is not None else None
    compiler = tc if check else None
    if installed and check:
        if asked and asked[:2] != installed[:2]:
            notes.append(f"--check targets the installed hipcc (HIP {mappings.version_text(installed)}), "
                         f"not --hip-version {hip_version}")
        return installed, compiler, True
    if asked:
        return asked, compiler, False
    if installed:
        notes.append(f"target HIP {mappings.version_text(installed)}: the installed hipcc's (--hip-version "
                     "chooses another)")
        return installed, compiler, True
    return mappings.parse_version(mappings.NEWEST_HIP), compiler, False


def _target_notes(report: PortReport, target: tuple[int, ...], roc: bool) -> list[str]:
    """What targeting this HIP version (and --roc) changed, said once for the tree."""
    notes = []
    older = [u for f in report.files for u in f.uses if not u.supported and "needs HIP" in u.reason]
    legacy = [w for f in report.files for w in f.rewrites if "HIP < 6.2" in w.what or "the target lacks" in w.what]
    if older or legacy:
        notes.append(f"target HIP {mappings.version_text(target)}: {len(legacy)} call(s) emitted in the form this "
                     f"version has, {len(older)} use(s) need a newer HIP (see the unsupported list)")
    if roc and any(u.family == "cufft" for f in report.files for u in f.uses):
        notes.append("--roc: cuFFT goes to hipFFT (rocFFT's API is not cuFFT's; HIPIFY has no cuFFT->rocFFT map)")
    return notes
