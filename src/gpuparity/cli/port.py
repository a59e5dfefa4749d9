"""`gpuparity port`: translate CUDA sources to HIP, score portability, report hazards.

Import-light on purpose: the porting modules load inside the command, so `--help` is fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click
import typer


def _write_stdout(text: str) -> None:
    """Diff text as the source bytes were (non-UTF-8 bytes kept), whatever the locale."""
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
    sys.stdout.buffer.flush()


def _report_to_stdout(result, write) -> None:
    """'-' as a report path: the report, written as for a file, goes to stdout."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report"
        write(result, path)
        sys.stdout.flush()
        sys.stdout.buffer.write(path.read_bytes())
        sys.stdout.buffer.flush()


def _guard_destination(src: Path, out: Path) -> None:
    """--out never lands on the store (any alias), before any work: one file's output is guarded
    as a report is; in a tree, a store file is refused where a source file's translation would go."""
    import os

    from gpuparity.cli.common import guard_output
    from gpuparity.errors import UserError
    from gpuparity.results.store import store_files
    from gpuparity.validate import terminal_safe

    if not src.is_dir():
        dest = out / src.name if out.is_dir() else out
        if os.path.isdir(os.path.dirname(os.path.abspath(dest))):     # a folder port makes holds no store
            guard_output(str(dest), "--out", inputs=(str(src),))
        return
    root, src_real = os.path.realpath(out), os.path.realpath(src)
    for what, path in store_files(None):
        real = os.path.realpath(path)
        if real.startswith(root.rstrip(os.sep) + os.sep) and os.path.isfile(
                os.path.join(src_real, os.path.relpath(real, root))):
            raise UserError(f"--out {terminal_safe(out)}: {terminal_safe(os.path.relpath(real, root))} there is "
                            f"{what}: refusing to write over it (give another folder)")


def register(app: typer.Typer) -> None:
    @app.command("port")
    def port_command(
        src: Path = typer.Argument(..., help="CUDA source folder or file (.cu .cuh .cpp .cc .h .hpp, CMake)."),
        out: Optional[Path] = typer.Option(None, "--out", "-o",
                                           help="Write the HIP tree here. Without it: dry run, prints a diff."),
        check: bool = typer.Option(False, "--check", help="Compile translations with hipcc (for gfx90a) and "
                                   "the originals with nvcc where installed; report the compile pass rate. Targets "
                                   "the installed hipcc's HIP version."),
        json_path: Optional[Path] = typer.Option(None, "--json", help="Write the JSON report here ('-': stdout)."),
        html_path: Optional[Path] = typer.Option(None, "--html", help="Write the HTML report here ('-': stdout)."),
        csv_path: Optional[Path] = typer.Option(None, "--csv", help="Write converted / not converted counts "
                                                "per file and API family (CSV) here ('-': stdout)."),
        hip_version: Optional[str] = typer.Option(None, "--hip-version",
                                                  help="Target HIP version (default: the installed hipcc's, else "
                                                  "the newest, 7.0); APIs that version lacks are emitted in its "
                                                  "older form or reported."),
        headers: Optional[str] = typer.Option(None, "--headers", click_type=click.Choice(["hipify", "folder"]),
                                              help="Library headers as HIPIFY names them (hipblas.h) or in their "
                                              "folders (hipblas/hipblas.h; default when targeting the installed "
                                              "hipcc)."),
        launch: str = typer.Option("chevron", "--launch", click_type=click.Choice(["chevron", "ggl"]),
                                   help="Kernel launches: 'chevron' keeps <<<>>>, 'ggl' emits hipLaunchKernelGGL."),
        roc: bool = typer.Option(False, "--roc", help="cuBLAS/cuSPARSE/cuRAND/cuSOLVER straight to rocBLAS/"
                                 "rocSPARSE/rocRAND/rocSOLVER instead of the hip* libraries."),
        examine: bool = typer.Option(False, "--examine", help="Write nothing: count CUDA references converted "
                                     "and not converted per file and API family."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No per-file summary."),
    ) -> None:
        """Translate CUDA to HIP, score portability and report AMD hazards."""
        from gpuparity.errors import UserError
        from gpuparity.port import report as reporting
        from gpuparity.port.check import FAIL_TRANSLATION
        from gpuparity.port.run import port

        to_stdout = [p for p in (json_path, html_path, csv_path) if p is not None and str(p) == "-"]
        if len(to_stdout) > 1:
            raise UserError("only one of --json, --html and --csv can be '-' (stdout)")
        dry_run = out is None and not examine
        if dry_run and to_stdout:
            raise UserError("a dry run prints its diff on stdout: give --out DIR, or --examine, to send a report to '-'")
        from gpuparity.cli.common import guard_output

        named = [(o, p) for o, p in (("--json", json_path), ("--html", html_path), ("--csv", csv_path)) if p]
        for option, path in named:      # before the work, and no folder is made for a report
            others = [str(p) for o, p in named if o != option and str(p) != "-"]
            guard_output(path, option, inputs=tuple(others), trees=(src,))     # never into the source tree
        if out is not None:
            _guard_destination(src, out)
        result = port(src, out, hip_version=hip_version, launch=launch, check=check, roc=roc, examine=examine,
                      headers=headers)
        if dry_run:
            _write_stdout("".join(f.diff for f in result.files if f.diff))
        if examine:
            lines = reporting.examine_lines(result)
        else:
            summary = reporting.summary_lines(result)
            lines = summary if not quiet else summary[:2]
        # A dry run's stdout is the diff (pipe it to `patch -p1`), so the summary goes to stderr.
        stream = sys.stderr if dry_run or to_stdout else sys.stdout
        for line in lines:
            print(line, file=stream)
        for path, write in ((json_path, reporting.write_json), (html_path, reporting.write_html),
                            (csv_path, reporting.write_csv)):
            if path is None:
                continue
            try:
                if str(path) == "-":
                    _report_to_stdout(result, write)
                else:
                    from gpuparity.validate import replacing

                    with replacing(str(path)) as tmp:       # whole or not at all; a hard link replaced
                        write(result, Path(tmp))
            except OSError as exc:
                raise UserError(f"cannot write report {path}: {exc.strerror or exc}") from exc
        if check and result.check_counts().get(FAIL_TRANSLATION):
            raise typer.Exit(1)
