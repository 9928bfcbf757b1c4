"""Heap memory a kernel never initialised is not zero in the sandbox (issue 63, point 5).

A kernel that accumulates into a scratch buffer it never zeroed passed wherever that buffer was
fresh pages (zero-filled by the kernel). The runner poisons fresh and freed heap (glibc's
M_PERTURB: npu_pool.sandbox.heap_poison), so such a read shows at the correctness gate."""

from __future__ import annotations

import subprocess
import sys

from npu_pool.verdict import Candidate
from npu_pool.verifier import verify

from ..harness_support import ROOT, SUITE, harness_config

# ReLU through a 64 MiB scratch buffer it never initialises (`+=` into it). 64 MiB is above glibc's
# largest mmap threshold (32 MiB), so without the poisoning the buffer is always fresh zero pages
# and the kernel passes; with it, it starts at 3.4e38 and fails.
UNINITIALISED_SCRATCH = """#include <cstdint>
#include <cstdlib>
extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = x_d0 * x_d1;
    const int64_t m = n < (int64_t(1) << 24) ? (int64_t(1) << 24) : n;
    float* acc = static_cast<float*>(std::malloc(sizeof(float) * m));
    for (int64_t i = 0; i < n; ++i) acc[i] += x[i] > 0.f ? x[i] : 0.f;
    for (int64_t i = 0; i < n; ++i) out[i] = acc[i];
    std::free(acc);
}
"""

# The same scratch, zeroed first (calloc): a correct kernel, whatever the poisoning.
ZEROED_SCRATCH = UNINITIALISED_SCRATCH.replace("std::malloc(sizeof(float) * m)", "std::calloc(m, sizeof(float))")


def _relu_task():
    from npu_pool.tasks.spec import load_task

    return load_task(SUITE / "level1" / "4_ReLU.py", max_bytes=4 * 2**20)


def test_a_kernel_reading_heap_it_never_wrote_fails_the_correctness_gate():
    task, config = _relu_task(), harness_config()
    verdict = verify(task, Candidate(source=UNINITIALISED_SCRATCH, format="kernel"), config)
    assert not verdict.feasible and (verdict.gate, verdict.category) == ("correctness", "mismatch"), verdict.reason
    assert verdict.sandbox.get("applied", {}).get("heap") == "poisoned until profiling", verdict.sandbox
    zeroed = verify(task, Candidate(source=ZEROED_SCRATCH, format="kernel"), config)
    assert zeroed.feasible, zeroed.reason


def test_fresh_heap_is_0x7f_and_freed_heap_0x80_in_a_poisoned_process():
    """In a process of its own (the poisoning is for the whole process): bytes malloc hands out,
    and bytes of a block after free (past the allocator's own pointers at its start). Blocks of up
    to 1 KiB that glibc recycles through its per-thread cache (tcache) skip the fill both ways: they
    hold what their last owner left, never fresh zero pages."""
    probe = """
import ctypes
from npu_pool.sandbox.heap_poison import poison_heap
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
assert poison_heap()
for size in (4096, 64 << 20):
    block = libc.malloc(size)
    fresh = ctypes.string_at(block + 64, 32)
    libc.free(block)
    print(size, fresh.hex())
small = libc.malloc(4096)
libc.free(small)
print("freed", ctypes.string_at(small + 64, 32).hex())
"""
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.split()
    assert lines[1] == "7f" * 32 and lines[3] == "7f" * 32  # a 4 KiB block and a fresh 64 MiB mapping
    assert lines[5] == "80" * 32
