"""`gpuparity port`: translate CUDA sources to HIP, score portability, report hazards.

Import-light on purpose: the porting modules load inside the command, so `--help` is fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click
import typer

from gpuparity.cli.output import format_option, output_option


def _write_stdout(text: str) -> None:
    """Diff text as the source bytes were (non-UTF-8 bytes kept), whatever the locale."""
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
    sys.stdout.buffer.flush()


FORMATS = ("text", "json", "html", "csv")
OLD_REPORTS = ("--json", "--html", "--csv")         # one option per report format, before -f/-o


def _guard_destination(src: Path, out: Path) -> None:
    """--out never lands on the store (any alias), before any work: one file's output is guarded
    as a report is; in a tree, a store file is refused where a source file's translation would go."""
    import os

    from gpuparity.cli.common import guard_output
    from gpuparity.errors import UserError
    from gpuparity.results.store_url import store_files
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
        out: Optional[Path] = typer.Option(None, "--out",
                                           help="Write the HIP tree here. Without it: dry run, prints a diff."),
        out_format: Optional[str] = format_option(
            FORMATS, None, help="text: the summary (default); json, html: the report; csv: converted / not converted "
                                "counts per file and API family.", json_flag=False),
        output: Optional[str] = output_option(
            "Write the output (-f) to this file instead of stdout ('-': stdout); never into the source tree. "
            "Without -f, deprecated: the HIP tree, as --out."),
        check: bool = typer.Option(False, "--check", help="Compile translations with hipcc (for gfx90a) and "
                                   "the originals with nvcc where installed; report the compile pass rate. Targets "
                                   "the installed hipcc's HIP version."),
        json_path: Optional[Path] = typer.Option(None, "--json", metavar="FILE",
                                                 help="Deprecated: -f json -o FILE (still writes FILE)."),
        html_path: Optional[Path] = typer.Option(None, "--html", metavar="FILE",
                                                 help="Deprecated: -f html -o FILE (still writes FILE)."),
        csv_path: Optional[Path] = typer.Option(None, "--csv", metavar="FILE",
                                                help="Deprecated: -f csv -o FILE (still writes FILE)."),
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
        experimental: bool = typer.Option(True, "--experimental/--no-experimental",
                                          help="Also the APIs HIPIFY marks experimental (HIPIFY's default: without)."),
        dnn: str = typer.Option("miopen", "--dnn", click_type=click.Choice(["miopen", "hipdnn"]),
                                help="cuDNN to MIOpen (its argument order) or to hipDNN's names (HIPIFY's default "
                                "without --miopen)."),
        define: list[str] = typer.Option([], "--define", "-D", metavar="NAME[=V]",
                                         help="A macro defined for --skip-excluded (as the compiler's -D)."),
        skip_excluded: bool = typer.Option(False, "--skip-excluded",
                                           help="Leave #if branches excluded under the -D macros untranslated "
                                           "(HIPIFY's --skip-excluded-preprocessor-conditional-blocks)."),
        amap: bool = typer.Option(False, "--amap", help="As much as possible: translate excluded #if branches "
                                  "too (overrides --skip-excluded, as in HIPIFY)."),
        hip_data_types: bool = typer.Option(False, "--hip-data-types", help="cudaDataType to hipDataType, not the "
                                            "libraries' own enums (HIPIFY's --use-hip-data-types)."),
        run: bool = typer.Option(False, "--run", help="Build each program of the translation (a unit with main) "
                                 "against HIP-CPU with g++ and run it, on the CPU: built, ran, exit status, and the "
                                 "PASS/FAIL it prints."),
        program_args: Optional[list[str]] = typer.Argument(None, metavar="[-- ARGS]",
                                                           help="With --run: arguments for every program."),
        hip_cpu_dir: Optional[Path] = typer.Option(None, "--hip-cpu", metavar="DIR",
                                                   help="With --run: this HIP-CPU checkout instead of the packaged "
                                                   "copy."),
        expect: Optional[str] = typer.Option(None, "--expect", metavar="REGEX", help="With --run: a program passes "
                                             "when its output matches REGEX and it exits 0 (default: PASS/FAIL)."),
        compare_to: Optional[Path] = typer.Option(None, "--compare-to", metavar="DIR",
                                                  help="With --run: build and run the programs of this HIP tree "
                                                  "(e.g. a human port) too, and compare the outputs."),
        run_timeout: float = typer.Option(60.0, "--timeout", metavar="SECONDS",
                                          help="With --run: a program still running after this is killed."),
        jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="With --run: builds and runs at once "
                                           "(default: one per CPU)."),
        rtol: float = typer.Option(1e-5, "--rtol", help="With --compare-to: relative tolerance for numbers."),
        atol: float = typer.Option(1e-8, "--atol", help="With --compare-to: absolute tolerance for numbers."),
    ) -> None:
        """Translate CUDA to HIP, score portability and report AMD hazards."""
        from gpuparity.errors import UserError
        from gpuparity.port import report as reporting
        from gpuparity.port.check import FAIL_TRANSLATION
        from gpuparity.port.run import port

        old_tree = None
        if output is not None and out_format is None:     # -o DIR: the HIP tree, as before -f/-o
            if out is not None:
                raise UserError("-o without -f names the HIP tree (deprecated: --out DIR): give -f FORMAT with "
                                "-o FILE, or drop --out")
            out, output, old_tree = Path(output), None, ("port -o DIR", "--out DIR (-o FILE names the -f output)")
        fmt = out_format or "text"
        # (format, path, option, old spelling) of each output asked for: -f/-o, then the old options
        wanted = [(fmt, output, "--output", None)] if fmt != "text" or output not in (None, "-") else []
        wanted += [(o[2:], str(p), o, (f"port {o} FILE", f"-f {o[2:]} -o FILE")) for o, p in
                   zip(OLD_REPORTS, (json_path, html_path, csv_path), strict=True) if p is not None]
        to_stdout = [w for w in wanted if w[1] in (None, "-")]
        if len(to_stdout) > 1:
            raise UserError("only one output can go to stdout: give -o FILE (or --json/--html/--csv FILE)")
        dry_run = out is None and not examine
        if dry_run and to_stdout:
            raise UserError("a dry run prints its diff on stdout: give --out DIR, or --examine, to send a report to "
                            "stdout (or -o FILE)")
        from gpuparity.cli.output import Output

        sinks = []
        for i, (kind, path, option, old) in enumerate(wanted):    # before the work; no folder made for a report
            others = tuple(w[1] for j, w in enumerate(wanted) if j != i and w[1] not in (None, "-"))
            sinks.append(Output(kind, path, inputs=others, trees=(src,), option=option, old=old))  # never in src
        if out is not None:
            _guard_destination(src, out)
        hc = _run_prerequisites(run, out, examine, hip_cpu_dir, program_args, run_timeout, expect, compare_to, jobs)
        from gpuparity.port.hipify_options import hipify_options

        hipify = hipify_options(experimental=experimental, dnn=dnn, defines=define, skip_excluded=skip_excluded,
                                amap=amap, hip_data_types=hip_data_types)
        result = port(src, out, hip_version=hip_version, launch=launch, check=check, roc=roc, examine=examine,
                      headers=headers, hipify=hipify)
        if hc is not None:
            from gpuparity.port.run_programs import run_tree

            result.run = run_tree(hc, out, program_args, timeout=run_timeout, expect=expect, compare_to=compare_to,
                                  jobs=jobs, rtol=rtol, atol=atol)
        if dry_run:
            _write_stdout("".join(f.diff for f in result.files if f.diff))
        if examine:
            lines = reporting.examine_lines(result)
        else:
            summary = reporting.summary_lines(result)
            lines = summary if not quiet else summary[:2]
        # A dry run's stdout is the diff (pipe it to `patch -p1`), so the summary goes to stderr.
        stream = sys.stderr if dry_run or to_stdout else sys.stdout
        text_sink = next((s for s in sinks if s.format == "text"), None)     # -f text -o FILE
        if text_sink is not None:
            text_sink.text("\n".join(lines) + "\n", f"{len(lines)} lines")
        else:
            for line in lines:
                print(line, file=stream)
        writers = {"json": reporting.write_json, "html": reporting.write_html, "csv": reporting.write_csv}
        for sink in sinks:
            if sink.format in writers:      # whole or not at all; a hard link replaced
                sink.produce(lambda tmp, write=writers[sink.format]: write(result, Path(tmp)))
            sink.note_old_spelling()
        if result.run is not None and not to_stdout:
            from gpuparity.cli.port_run_table import print_runs

            print_runs(result.run)
        if old_tree:
            from gpuparity.cli.output import deprecated

            deprecated(*old_tree)
        if check and result.check_counts().get(FAIL_TRANSLATION):
            raise typer.Exit(1)
        if result.run is not None and result.run.failed:
            raise typer.Exit(1)


def _run_prerequisites(run: bool, out: Optional[Path], examine: bool, hip_cpu_dir: Optional[Path],
                       program_args: Optional[list[str]], timeout: float, expect: Optional[str],
                       compare_to: Optional[Path], jobs: Optional[int]):
    """--run's options and tools checked before any work: the HIP-CPU copy and g++ to build with."""
    from gpuparity.errors import UserError

    given = [name for name, v in (("--hip-cpu", hip_cpu_dir), ("--expect", expect), ("--compare-to", compare_to),
                                  ("program arguments", program_args)) if v]
    if not run:
        if given:
            raise UserError(f"{given[0]} goes with --run")
        return None
    if out is None or examine:
        raise UserError("--run builds the translation: give --out DIR (and no --examine)")
    from gpuparity.port import hip_cpu, run_programs

    run_programs.validate(timeout, expect, compare_to, jobs)
    return hip_cpu.locate(hip_cpu_dir)
