"""Translation speed of `gpuparity port` on a generated CUDA tree, beside hipify-perl's.

    python bench/port_speed.py [--files 200] [--lines 2000] [--jobs N] [--out] [--roc] [--launch ggl] [--perl FILE]

Writes FILES generated .cu files of about LINES lines each into a temporary folder and ports the
tree with JOBS worker processes (translation, hazards and a diff per file, as a dry run does; the
HIP tree written instead with --out). Then hipify-perl translates the same files in its fastest
mode (-quiet-warnings, the translation printed to a discarded stdout: -inplace also spawns a `cp`
per file): as it ships, one process over all files, and, when JOBS > 1, also as JOBS processes
over JOBS slices of the files (`xargs -P JOBS`: the same CPUs gpuparity had).

Prints each side's lines per second of wall-clock time and per CPU-second (user + system time of
the process and its workers: the translators' own speed, which a busy, shared machine distorts
least), and the ratios last (target: >= 10x): per CPU-second, and wall-clock against hipify-perl
as it ships and on the same CPUs. Without hipify-perl (--perl, default the shared reference copy)
only gpuparity's rates are printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# One block of realistic CUDA: a kernel with a warp reduction, host code with streams,
# events and error checks, comments and strings that must not be touched, and a layer that
# calls cuBLAS and cuDNN (whose MIOpen call is rewritten into another argument order).
_BLOCK = '''
// ---- block {i}: reduction + host driver (cudaMalloc in a comment stays) ----
__global__ void reduce_{i}(const float* __restrict__ in, float* out, int n) {{
    extern __shared__ float partial_{i}[];
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % warpSize;
    float v = tid < n ? in[tid] : 0.0f;
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffff, v, offset);
    if (lane == 0) partial_{i}[threadIdx.x / warpSize] = v;
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(out, partial_{i}[0]);
}}

static float run_{i}(const float* h_in, int n) {{
    float *d_in = nullptr, *d_out = nullptr;
    cudaStream_t stream;
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaMalloc(&d_in, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_out, sizeof(float)));
    CUDA_CHECK(cudaMemcpyAsync(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaEventRecord(start, stream));
    reduce_{i}<<<(n + 255) / 256, 256, 8 * sizeof(float), stream>>>(d_in, d_out, n);
    CUDA_CHECK(cudaEventRecord(stop, stream));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    std::printf("block {i}: %.3f ms (cudaEventElapsedTime, \\"quoted\\")\\n", ms);
    CUDA_CHECK(cudaFree(d_in));
    CUDA_CHECK(cudaFree(d_out));
    CUDA_CHECK(cudaStreamDestroy(stream));
    return ms;
}}

static void layer_{i}(cublasHandle_t blas, cudnnHandle_t dnn, cudnnTensorDescriptor_t x_desc,
                      cudnnFilterDescriptor_t w_desc, cudnnConvolutionDescriptor_t conv,
                      cudnnTensorDescriptor_t y_desc, const float* x, const float* w, float* y, void* ws,
                      size_t ws_size, int n) {{
    const float one = 1.0f, zero = 0.0f;
    cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, n, n, n, &one, x, n, w, n, &zero, y, n);
    cudnnConvolutionForward(dnn, &one, x_desc, x, w_desc, w, conv, CUDNN_CONVOLUTION_FWD_ALGO_GEMM, ws, ws_size,
                            &zero, y_desc, y);
}}
'''

_HEADER = '''// Generated benchmark source {name}
#include <cstdio>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cudnn.h>
#define CUDA_CHECK(call) do {{ cudaError_t e_ = (call); \\
    if (e_ != cudaSuccess) std::printf("CUDA error %s\\n", cudaGetErrorString(e_)); }} while (0)
'''


def generate(root: Path, files: int, lines: int) -> int:
    total = 0
    for f in range(files):
        parts = [_HEADER.format(name=f"gen_{f}.cu")]
        count, i = parts[0].count("\n"), 0
        while count < lines:
            parts.append(_BLOCK.format(i=i))
            count += parts[-1].count("\n")
            i += 1
        text = "".join(parts)
        (root / f"gen_{f:03d}.cu").write_text(text, encoding="utf-8")
        total += count
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="processes for each side (default: one per CPU)")
    parser.add_argument("--out", action="store_true", help="write the HIP tree instead of a dry run")
    parser.add_argument("--roc", action="store_true", help="translate with --roc")
    parser.add_argument("--launch", default="chevron", choices=["chevron", "ggl"])
    parser.add_argument("--perl", type=Path, default=Path("/work/shared/reference/hipify-perl/hipify-perl"),
                        help="hipify-perl, the peer timed on the same files")
    args = parser.parse_args(argv)

    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    from gpuparity.port.run import port

    with tempfile.TemporaryDirectory(prefix="gpuparity-port-bench-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        generate(src, args.files, args.lines)
        cpu0, started = _cpu(), time.perf_counter()
        report = port(src, Path(tmp) / "hip" if args.out else None, want_diff=not args.out, roc=args.roc,
                      launch=args.launch, jobs=args.jobs)
        seconds, cpu = time.perf_counter() - started, _cpu() - cpu0
        perl = [(jobs, _hipify_perl(args, src, jobs)) for jobs in sorted({1, args.jobs})]
    score = report.score
    lines = report.lines
    from gpuparity.port import lexer

    print(f"files: {len(report.files)}, lines: {lines}, hazards: {len(report.hazards)}, "
          f"score: {score.percent()}, jobs: {args.jobs}, "
          f"lexer: {'compiled (port/_lexc.c)' if lexer._lexc else 'Python (port/_lexc.c not built)'}", file=sys.stderr)
    print(f"port ({args.jobs} process(es)): {lines / seconds:.0f} lines/s ({seconds:.2f} s), "
          f"{lines / cpu:.0f} lines per CPU-second ({cpu:.2f} CPU-s)")
    if perl[0][1] is None:
        return 0
    for jobs, (perl_seconds, perl_cpu) in perl:
        print(f"hipify-perl (-quiet-warnings, {jobs} process(es)): {lines / perl_seconds:.0f} lines/s "
              f"({perl_seconds:.2f} s), {lines / perl_cpu:.0f} lines per CPU-second ({perl_cpu:.2f} CPU-s)")
    perl_cpu = sum(run[1] for _, run in perl) / len(perl)
    print(f"ratio: {perl_cpu / cpu:.1f}x hipify-perl per CPU-second; wall-clock {perl[0][1][0] / seconds:.1f}x "
          f"hipify-perl as it ships (one process), {perl[-1][1][0] / seconds:.1f}x on the same {args.jobs} CPU(s) "
          "(target >= 10x)")
    return 0


def _cpu() -> float:
    """User + system seconds of this process and of its children that have ended (pool workers, perl)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _hipify_perl(args, src: Path, jobs: int) -> tuple[float, float] | None:
    """(wall, CPU) seconds hipify-perl takes over the same files, as `jobs` processes, or None."""
    if not args.perl.is_file() or shutil.which("perl") is None:
        print(f"hipify-perl not found at {args.perl}: no peer timed", file=sys.stderr)
        return None
    files = sorted(str(p) for p in src.glob("*.cu"))
    flags = ["-roc"] if args.roc else []
    flags += ["-hip-kernel-execution-syntax"] if args.launch == "ggl" else []
    cpu0, started = _cpu(), time.perf_counter()
    procs = [subprocess.Popen(["perl", str(args.perl), "-quiet-warnings", *flags, *files[k::jobs]],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for k in range(min(jobs, len(files)))]
    for proc in procs:
        proc.wait()
    return time.perf_counter() - started, _cpu() - cpu0


if __name__ == "__main__":
    raise SystemExit(main())
