"""AMD hazards: each planted kind at its line, none on clean code, token-aware rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuparity.port.hazards import KINDS, find_hazards
from gpuparity.port.mappings import parse_version
from gpuparity.port.tokens import tokenize

SAMPLES = Path(__file__).parent / "data" / "cuda_samples"
V70, V52 = parse_version("7.0"), parse_version("5.2")


def hazards(text: str, engine: str = "auto", target=V70) -> set[tuple[str, int]]:
    tokens, _ = tokenize(text, engine)
    return {(h.kind, h.line) for h in find_hazards(text, tokens, target)}


def expected(text: str) -> set[tuple[str, int]]:
    """`// expect: kind[, kind]` markers in a sample."""
    found = set()
    for n, line in enumerate(text.splitlines(), 1):
        m = re.search(r"expect: ([\w, ]+)", line)
        if m:
            found |= {(k.strip(), n) for k in m.group(1).split(",")}
    return found


@pytest.mark.parametrize("engine", ["auto", "lexer"])
def test_planted_hazards_are_reported_at_their_lines(engine):
    text = (SAMPLES / "hazards" / "planted.cu").read_text()
    want = expected(text)
    assert {k for k, _ in want} >= set(KINDS) - {"sync_mask_dropped"}  # every kind is planted
    assert hazards(text, engine) == want


@pytest.mark.parametrize("engine", ["auto", "lexer"])
@pytest.mark.parametrize("target", [V70, V52])
def test_clean_code_raises_nothing(engine, target):
    text = (SAMPLES / "hazards" / "clean.cu").read_text()
    assert hazards(text, engine, target) == set()


@pytest.mark.parametrize("name, want", [
    ("vector_add_streams.cu", set()),
    ("curand_pi.cu", set()),
    ("cublas_sgemm.cu", set()),
    ("warp_reduce.cu", {("lane_mask_32", 9)}),
    ("inline_ptx.cu", {("cuda_arch_macro", 8), ("inline_asm", 10), ("cuda_arch_macro", 18),
                       ("inline_asm", 20)}),
])
def test_sample_programs(name, want):
    assert hazards((SAMPLES / name).read_text()) == want


def test_rules_ignore_comments_and_strings():
    text = ('// int lane = threadIdx.x & 31;\n'
            'const char* s = "threadIdx.x % 32 asm( __CUDA_ARCH__";\n'
            '/* __shared__ float s[32]; */\n'
            '__global__ void k(int* o) { o[0] = threadIdx.x % 32; }\n')
    assert hazards(text) == {("warp_size_32", 4)}


def test_hazard_carries_why_fix_and_code():
    text = "__global__ void k(int* o) {\n  int lane = threadIdx.x & 31;\n  o[lane] = 1;\n}\n"
    tokens, _ = tokenize(text)
    [h] = find_hazards(text, tokens)
    assert (h.kind, h.line) == ("warp_size_32", 2)
    assert "64" in h.why and "warpSize" in h.fix
    assert h.code == "int lane = threadIdx.x & 31;"


def test_old_hip_targets_report_dropped_masks():
    text = ("__device__ float f(float v, unsigned long long m) {\n"
            "  v += __shfl_xor_sync(m, v, 1);\n"
            "  v += __shfl_xor_sync(__activemask(), v, 2);\n"
            "  return v + __shfl_xor_sync(0xffffffff, v, 4);\n"
            "}\n")
    assert hazards(text, target=V52) == {("sync_mask_dropped", 2), ("lane_mask_32", 4)}
    assert hazards(text, target=V70) == {("lane_mask_32", 4)}


def test_ballot_widths():
    text = ("__device__ void f(int p, unsigned long long* out) {\n"
            "  unsigned long long ok = __ballot_sync(__activemask(), p);\n"
            "  auto fine = __ballot_sync(__activemask(), p);\n"
            "  uint32_t bad = __ballot_sync(__activemask(), p);\n"
            "  unsigned narrow;\n"
            "  narrow = __activemask();\n"
            "  out[0] = ok + fine + bad + narrow + __popcll(ok) + __popc(__activemask());\n"
            "}\n")
    assert hazards(text) == {("ballot_32bit", 4), ("ballot_32bit", 6), ("ballot_32bit", 7)}


def test_shared_memory_limit_uses_constants():
    text = ("constexpr int kTile = 160;\n"
            "#define SMEM_BYTES (kTile * kTile * sizeof(float))\n"
            "__global__ void k(float*);\n"
            "void f(float* p) {\n"
            "  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);\n"
            "  k<<<1, 256, 64 * 1024>>>(p);\n"
            "  k<<<1, 256, 64 * 1024 + 4>>>(p);\n"
            "}\n")
    assert hazards(text) == {("shared_memory_64k", 5), ("shared_memory_64k", 7)}


def test_warp_loops_need_warp_context():
    text = ("__global__ void k(float* a) {\n"
            "  float v = a[threadIdx.x];\n"
            "  for (int i = 0; i < 32; ++i) v += a[i];\n"
            "  for (int o = 1; o < 32; o *= 2) v += __shfl_up_sync(__activemask(), v, o);\n"
            "  for (int lane = 0; lane < 32; ++lane) a[lane] = v;\n"
            "}\n")
    assert hazards(text) == {("warp_size_32", 4), ("warp_size_32", 5)}
