"""How much does gpuparity's harness cost? Compared in one run against bare peers:

1. fp32 GEMM 2048^3 timed by gpuparity vs a bare torch.mm timing loop (target >= 0.97);
2. triad bandwidth timed by gpuparity vs STREAM in C (gcc -O3 -fopenmp, built here) (target >= 0.90).

Rounds alternate between harness and peer so drift on a noisy machine hits both.
Prints the two ratios last.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

from gpuparity.execute.runner import build_context
from gpuparity.workloads.gemm import Gemm
from gpuparity.workloads.memory import Memory, array_elems

ROUNDS = 3
STREAM_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
/* Triad a = b + s*c over fp32 arrays; prints the median seconds of REPS timed passes. */
int cmp(const void *x, const void *y) { double d = *(double*)x - *(double*)y; return (d > 0) - (d < 0); }
int main(int argc, char **argv) {
  long n = atol(argv[1]); int reps = atoi(argv[2]);
  float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float)), *c = malloc(n * sizeof(float));
  #pragma omp parallel for
  for (long i = 0; i < n; i++) { a[i] = 0; b[i] = (float)(i % 7); c[i] = (float)(i % 5); }
  double *t = malloc(reps * sizeof(double)); const float s = 3.0f;
  for (int r = 0; r < reps + 2; r++) {
    double t0 = omp_get_wtime();
    #pragma omp parallel for
    for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
    double dt = omp_get_wtime() - t0;
    if (r >= 2) t[r - 2] = dt;  /* two warm-up passes */
  }
  qsort(t, reps, sizeof(double), cmp);
  printf("%.9f %f\n", t[reps / 2], a[n / 2]);
  return 0;
}
"""


def bare_mm_tflops(n: int, seconds: float = 2.0) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    out = torch.empty(n, n)
    for _ in range(3):
        torch.mm(a, b, out=out)
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        t0 = time.perf_counter_ns()
        torch.mm(a, b, out=out)
        times.append((time.perf_counter_ns() - t0) / 1e9)
    return 2 * n**3 / statistics.median(times) / 1e12


def harness(workload, params, ctx) -> float:
    result = workload.execute(params, ctx)
    assert result["status"] == "ok", result["reason"]
    return result["metric"]["value"]


def build_stream(folder: str) -> str:
    src, exe = os.path.join(folder, "stream.c"), os.path.join(folder, "stream")
    with open(src, "w") as fh:
        fh.write(STREAM_C)
    subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", src, "-o", exe], check=True)
    return exe


def stream_gbs(exe: str, n: int, threads: int) -> float:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_PROC_BIND="true")
    out = subprocess.run([exe, str(n), "20"], capture_output=True, text=True, check=True, env=env).stdout
    return 3 * 4 * n / float(out.split()[0]) / 1e9


def main() -> None:
    ctx = build_context("standard", {})
    ctx.loop.max_time_s = 4.0
    gemm_params = {"m": 2048, "n": 2048, "k": 2048, "dtype": "fp32"}
    n = array_elems(ctx, "standard")
    triad_params = {"op": "triad", "elements": n, "dtype": "fp32"}
    threads = torch.get_num_threads()
    gemm_ratios, triad_ratios = [], []
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_stream(tmp)
        for r in range(ROUNDS):
            ours, bare = harness(Gemm(), gemm_params, ctx), bare_mm_tflops(2048)
            gemm_ratios.append(ours / bare)
            print(f"round {r}: gemm fp32 2048^3  gpuparity {ours:.4f}  bare torch.mm {bare:.4f} TFLOP/s", flush=True)
            ours, peer = harness(Memory(), triad_params, ctx), stream_gbs(exe, n, threads)
            triad_ratios.append(ours / peer)
            print(f"round {r}: triad {n * 4 / 2**20:.0f} MiB/array  gpuparity {ours:.2f}  STREAM(C) {peer:.2f} GB/s",
                  flush=True)
    print(f"gemm fp32 2048^3 gpuparity/bare ratio: {statistics.median(gemm_ratios):.3f} (target >= 0.97)")
    print(f"triad gpuparity/STREAM ratio: {statistics.median(triad_ratios):.3f} (target >= 0.90)")


if __name__ == "__main__":
    sys.exit(main())
