"""`gpuparity info`: the platform fingerprint."""

from __future__ import annotations

from typing import Optional

import typer

from gpuparity.cli.common import console, escape, fmt
from gpuparity.cli.output import Output, format_option, json_option, output_option


def register(app: typer.Typer) -> None:
    @app.command("info")
    def info(
        out_format: str = format_option(("table", "json"), help="json: the whole fingerprint."),
        output: Optional[str] = output_option(),
        as_json: bool = json_option(),
    ) -> None:
        """Show what this machine is: GPU or CPU, arch target, driver, CUDA/ROCm, torch, libraries."""
        sink = Output(out_format, output, as_json)      # the guard, before the (slow) detection
        from gpuparity.platform.detect import fingerprint

        fp = fingerprint()
        if sink.json:
            sink.print_json(fp)
            return
        with sink.writing():
            print_info(fp)


def print_info(fp: dict) -> None:
    from rich.table import Table

    t = Table(title="gpuparity info", show_header=False)
    spec = fp.get("spec") or {}
    cpu = fp.get("cpu") or {}
    rows = [
        ("backend", fp.get("backend")),
        ("vendor", fp.get("vendor")),
        ("product", fp.get("product")),
        ("arch target", fp.get("arch_target")),
        ("devices", fp.get("device_count")),
        ("memory", f"{(fp.get('memory_bytes') or 0) / 1e9:.1f} GB"),
        ("driver", fp.get("driver_version")),
        ("CUDA / HIP (torch)", f"{fp.get('cuda_version') or '-'} / {fp.get('hip_version') or '-'}"),
        ("torch", fp.get("torch_version")),
        ("BLAS", fp.get("gpu_blas") or fp.get("cpu_blas")),
        ("NCCL/RCCL", fp.get("nccl_version")),
        ("spec match", f"{spec.get('id', '-')}{' (estimated)' if spec.get('estimated') else ''}"),
        ("support list", f"{(fp.get('support') or {}).get('list') or '-'}: {(fp.get('support') or {}).get('note')}"),
        ("CPU", f"{cpu.get('model')} ({cpu.get('cores')} cores, {cpu.get('max_mhz') or '?'} MHz)"),
        ("CPU ISA", " ".join(cpu.get("isa") or [])),
        ("CPU fp16 / bf16 native", f"{cpu.get('fp16_native')} / {cpu.get('bf16_native')}"),
        ("env flags", " ".join(f"{k}={v}" for k, v in (fp.get("env") or {}).items()) or "-"),
    ]
    for k, v in rows:
        t.add_row(k, escape(fmt(v)))
    for k, why in (fp.get("unknown") or {}).items():
        t.add_row(f"unknown: {k}", escape(why))
    console().print(t)
