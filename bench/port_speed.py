"""Translation speed of `gpuparity port` on a generated CUDA tree, beside hipify-perl's.

    python bench/port_speed.py [--files 200] [--lines 2000] [--out] [--roc] [--launch ggl] [--perl FILE]

Writes FILES generated .cu files of about LINES lines each into a temporary folder, ports the
tree (a dry run unless --out), then runs hipify-perl on the same files in its fastest mode (one
process, -quiet-warnings -inplace, on copies), and prints `port: N lines/s`, hipify-perl's rate
and the ratio last (target: >= 10x). Without hipify-perl (--perl, default the shared reference
copy) only gpuparity's rate is printed.
"""

from __future__ import annotations

import argparse
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
    parser.add_argument("--out", action="store_true", help="write the HIP tree instead of a dry run")
    parser.add_argument("--roc", action="store_true", help="translate with --roc")
    parser.add_argument("--launch", default="chevron", choices=["chevron", "ggl"])
    parser.add_argument("--perl", type=Path, default=Path("/work/shared/reference/hipify-perl/hipify-perl"),
                        help="hipify-perl, the peer timed on the same files")
    args = parser.parse_args(argv)

    from gpuparity.port.run import port

    with tempfile.TemporaryDirectory(prefix="gpuparity-port-bench-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        generate(src, args.files, args.lines)
        started = time.perf_counter()
        report = port(src, Path(tmp) / "hip" if args.out else None, want_diff=not args.out, roc=args.roc,
                      launch=args.launch)
        seconds = time.perf_counter() - started
        perl_seconds = _hipify_perl(args, src, Path(tmp) / "perl")
    score = report.score
    print(f"files: {len(report.files)}, lines: {report.lines}, hazards: {len(report.hazards)}, "
          f"score: {score.percent()}, seconds: {seconds:.2f}", file=sys.stderr)
    rate = report.lines / seconds
    print(f"port: {rate:.0f} lines/s")
    if perl_seconds is not None:
        perl_rate = report.lines / perl_seconds
        print(f"hipify-perl (one process, -quiet-warnings -inplace): {perl_rate:.0f} lines/s, {perl_seconds:.2f} s")
        print(f"ratio: {rate / perl_rate:.1f}x hipify-perl (target >= 10x)")
    return 0


def _hipify_perl(args, src: Path, work: Path) -> float | None:
    """Seconds hipify-perl takes over copies of the same files in one process, or None."""
    if not args.perl.is_file() or shutil.which("perl") is None:
        print(f"hipify-perl not found at {args.perl}: no peer timed", file=sys.stderr)
        return None
    shutil.copytree(src, work)
    files = sorted(str(p) for p in work.glob("*.cu"))
    flags = ["-roc"] if args.roc else []
    flags += ["-hip-kernel-execution-syntax"] if args.launch == "ggl" else []
    started = time.perf_counter()
    subprocess.run(["perl", str(args.perl), "-quiet-warnings", "-inplace", *flags, *files], check=False,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


if __name__ == "__main__":
    raise SystemExit(main())
