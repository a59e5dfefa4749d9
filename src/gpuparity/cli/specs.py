"""`gpuparity specs`: datasheet figures of GPUs side by side."""

from __future__ import annotations

from typing import List, Optional

import typer

from gpuparity.cli.common import console, escape, fmt
from gpuparity.cli.output import Output, format_option, json_option, output_option
from gpuparity.errors import UserError

ROWS = [
    ("product", "product"), ("vendor", "vendor"), ("architecture", "architecture"), ("target", "target"),
    ("warp / wavefront", "warp_size"), ("memory GB", "memory_gb"), ("bandwidth TB/s", "memory_bw_tbs"),
    ("board power W", "tdp_w"), ("scale-up GB/s", "interconnect_gbs"), ("host link GB/s", "host_link_gbs"), ("FP64 vector", "fp64_tflops"),
    ("FP64 matrix", "fp64_matrix_tflops"), ("FP32", "fp32_tflops"), ("TF32", "tf32_tflops"),
    ("BF16", "bf16_tflops"), ("FP16", "fp16_tflops"), ("FP8", "fp8_tflops"), ("FP6", "fp6_tflops"),
    ("FP4", "fp4_tflops"), ("INT8 TOPS", "int8_tops"),
]


def register(app: typer.Typer) -> None:
    @app.command("specs")
    def specs(
        gpus: Optional[List[str]] = typer.Argument(None, help="GPU ids or names (h100-sxm, MI300X, ...); none: all."),
        out_format: str = format_option(("table", "json")),
        output: Optional[str] = output_option(),
        as_json: bool = json_option(),
        sources: bool = typer.Option(False, "--sources", help="Also print each row's sources and notes."),
    ) -> None:
        """Dense datasheet peaks (TFLOP/s), memory, bandwidth and power, side by side."""
        from gpuparity.platform.specs import all_specs, lookup

        sink = Output(out_format, output, as_json)      # the guard, before any work
        if gpus:
            chosen = []
            for g in gpus:
                s = lookup(g)
                if s is None:
                    raise UserError(f"no spec for '{g}'; known: {', '.join(all_specs())}")
                chosen.append(s)
        else:
            chosen = list(all_specs().values())
        if sink.json:
            sink.print_json(chosen, f"{len(chosen)} GPUs")
            return
        with sink.writing():
            print_specs(chosen, sources)


def print_specs(chosen: list[dict], sources: bool) -> None:
    from rich.table import Table

    t = Table(title="Datasheet figures (dense peaks, TFLOP/s unless stated)")
    t.add_column("")
    for s in chosen:
        t.add_column(s["id"], justify="right")
    for label, col in ROWS:
        t.add_row(label, *[escape(fmt(s.get(col))) for s in chosen])
    console().print(t)
    if sources:
        for s in chosen:
            console().print(f"[bold]{escape(s['id'])}[/]: {escape(s['source'])}\n  notes: {escape(s['notes'])}")
