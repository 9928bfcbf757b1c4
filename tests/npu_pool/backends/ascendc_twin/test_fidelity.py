"""Correct Ascend C kernels on the CPU twin match numpy references: elementwise (count and
mask/repeat forms), broadcast, row reductions, softmax, layer norm, matmul on the cube,
Compare/Select in both forms, half/bfloat16 arithmetic; DataCopy's dropped tail stays silent."""

from __future__ import annotations

import numpy as np
import pytest

from tests.npu_pool.backends.ascendc_twin.twin_support import make_tiling

RNG = np.random.default_rng(0)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def nan(*shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype=dtype)


def run3(lib, name, blocks, a, b, c, ints=(), floats=(), writable_b=False, **kw):
    tensors = [("a", a, 0), ("b", b, 1 if writable_b else 0), ("c", c, 1)]
    run = lib.run(name, blocks, tensors, make_tiling(ints, floats), **kw)
    assert run.rc == 0, run.fault
    assert run.fault == ""
    return run


@pytest.mark.parametrize("blocks", [1, 8])
def test_elementwise_add_tiled(fidelity, blocks):
    a, b, c = randn(8 * 4096), randn(8 * 4096), nan(8 * 4096)
    run = run3(fidelity, "add_tiled", blocks, a, b, c, ints=(a.size, 512, 2))
    np.testing.assert_array_equal(c, a + b)
    assert run.profile["blocks"] == blocks
    assert run.profile["bytes"]["GM->UB"] == 2 * a.nbytes and run.profile["bytes"]["UB->GM"] == c.nbytes


def test_elementwise_mask_repeat_form(fidelity):
    a, b, c = randn(1024), randn(1024), nan(1024)
    run3(fidelity, "add_masked", 1, a, b, c, ints=(1024,))
    expected = (a + b) * np.where(np.arange(1024) % 2 == 0, 2.0, 1.0).astype(np.float32)
    np.testing.assert_array_equal(c, expected)


def test_broadcast_bias_relu_with_unaligned_rows(fidelity):
    rows, cols = 37, 100  # 400-byte rows: DataCopyPad
    a, bias, c = randn(rows, cols), randn(cols), nan(rows, cols)
    run3(fidelity, "broadcast", 6, a, bias, c, ints=(rows, cols))
    np.testing.assert_allclose(c, np.maximum(a + bias, 0), rtol=0, atol=0)


def test_row_sum_and_max(fidelity):
    rows, cols = 50, 300
    a, s, m = randn(rows, cols), nan(rows), nan(rows)
    run3(fidelity, "row_reduce", 4, a, s, m, ints=(rows, cols), writable_b=True)
    np.testing.assert_allclose(s, a.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(m, a.max(axis=1))


def test_whole_reduce_per_repeat(fidelity):
    rows = 24
    a, s, m = randn(rows, 64), nan(rows), nan(rows)
    run3(fidelity, "whole_reduce", 1, a, s, m, ints=(rows,), writable_b=True)
    np.testing.assert_allclose(s, a.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(m, a.max(axis=1))


def test_block_reduce_per_32_bytes(fidelity):
    rows = 128
    a, s, m = randn(rows, 8), nan(rows), nan(rows)
    run3(fidelity, "block_reduce", 1, a, s, m, ints=(rows,), writable_b=True)
    np.testing.assert_allclose(s, a.sum(axis=1), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(m, a.max(axis=1))


def test_per_row_broadcast_with_brcb(fidelity):
    rows = 64
    a, d, c = randn(rows, 8), RNG.uniform(1, 2, rows).astype(np.float32), nan(rows, 8)
    run3(fidelity, "row_scale", 1, a, d, c, ints=(rows,))
    np.testing.assert_array_equal(c, a / d[:, None])


def test_softmax(fidelity):
    rows, cols = 33, 1000
    a, c = randn(rows, cols) * 3, nan(rows, cols)
    run3(fidelity, "softmax", 8, a, np.zeros(8, np.float32), c, ints=(rows, cols))
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(c, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_layer_norm(fidelity):
    rows, cols, eps = 20, 512, 1e-5
    a, gb, c = randn(rows, cols), randn(2 * cols), nan(rows, cols)
    run3(fidelity, "layernorm", 3, a, gb, c, ints=(rows, cols), floats=(eps,))
    mean = a.mean(axis=1, keepdims=True)
    var = ((a - mean) ** 2).mean(axis=1, keepdims=True)
    expected = (a - mean) / np.sqrt(var + eps) * gb[:cols] + gb[cols:]
    np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("iterate", [0, 1], ids=["IterateAll", "Iterate+GetTensorC"])
def test_matmul_on_the_cube(fidelity, iterate):
    M, N, K = 100, 80, 64
    a, b, c = randn(M, K), randn(K, N), nan(M, N)
    run = run3(fidelity, "matmul", 3, a, b, c, ints=(M, N, K, iterate))
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert run.profile["cube_macs"]["fp32"] > 0


def test_matmul_half_inputs_transposed_b(fidelity):
    M, N, K = 48, 64, 128
    a, b, c = randn(M, K, dtype=np.float16), randn(N, K, dtype=np.float16), nan(M, N)
    run = run3(fidelity, "matmul_half", 2, a, b, c, ints=(M, N, K))
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32).T, rtol=1e-4, atol=1e-3)
    assert run.profile["cube_macs"]["16bit"] > 0


def test_matmul_with_fused_epilogue_in_ub(fidelity):
    M, N, K = 64, 96, 40
    a, b, c = randn(M, K), randn(K, N), nan(M, N)
    run = run3(fidelity, "matmul_epilogue", 1, a, b, c, ints=(M, N, K))
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)
    assert run.profile["vector_repeats"]["arith"] == (M * N * 4) // 256


def test_compare_select(fidelity):
    a, b, c = randn(512), randn(512), nan(512)
    run3(fidelity, "compare_select", 1, a, b, c, ints=(512,))
    np.testing.assert_array_equal(c, np.where(a > b, a, 0).astype(np.float32))


def test_every_listed_instruction_in_the_mask_repeat_form(fidelity):
    n = 512
    a, b, c = randn(n), RNG.uniform(0.5, 2.0, n).astype(np.float32), nan(16 * n)
    run = run3(fidelity, "vector_masked_ops", 1, a, b, c, ints=(n,))
    f = np.float32
    expected = [a - b, a * b, a / b, np.maximum(a, b), np.minimum(a, b), a + f(0.25), a * f(-3), np.maximum(a, f(0.1)),
                np.minimum(a, f(0.1)), np.exp(a), np.log(b), np.abs(a), np.sqrt(b), f(1) / np.sqrt(b), f(1) / b,
                np.maximum(a, f(0))]
    for row, (got, want) in enumerate(zip(c.reshape(16, n), expected, strict=True)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, err_msg=f"row {row}")
    assert run.profile["vector_instructions"] == 16


def test_compare_select_mask_repeat_form(fidelity):
    n = 1024
    a, b, c = randn(n), randn(n), nan(5 * n)
    b[:64] = a[:64]  # equal pairs in repeat 0: GT is false, LT is false
    run = run3(fidelity, "compare_select_masked", 1, a, b, c, ints=(n,))
    out = c.reshape(5, n)
    np.testing.assert_array_equal(out[0], np.maximum(a, b))
    np.testing.assert_array_equal(out[1], np.where(a > b, a, np.float32(0.5)))
    first = np.tile(a[:64] > b[:64], n // 64)  # VSEL_CMPMASK_SPR: repeat 0's bits for every repeat
    np.testing.assert_array_equal(out[2], np.where(first, a, b))
    lanes = np.arange(n) % 64 < 32
    np.testing.assert_array_equal(out[3], np.where(lanes, np.where(b >= 0, a, b), np.float32(7)))
    np.testing.assert_array_equal(out[4], np.where(a < np.tile(b[:64], n // 64), a, np.float32(0)))
    assert run.profile["vector_repeats"]["compare_select"] == 8 * (n // 64)  # eight instructions


def test_duplicate_and_cast_bit_masks(fidelity):
    n = 512
    a, c = randn(n) * 1000, nan(2 * n)
    run3(fidelity, "dup_cast_bitmask", 1, a, np.zeros(8, np.float32), c, ints=(n,))
    even = np.arange(n) % 2 == 0
    np.testing.assert_array_equal(c[:n], np.where(even, np.float32(1.5), a))
    lanes = np.arange(n) % 64 < 16
    np.testing.assert_array_equal(c[n:], np.where(lanes, a.astype(np.float16).astype(np.float32), np.float32(-1)))


def test_half_arithmetic_rounds_like_ieee(fidelity):
    n = 4096
    a, b = randn(n, dtype=np.float16), randn(n, dtype=np.float16)
    c = np.zeros(n, dtype=np.uint16)
    run3(fidelity, "half_ops", 1, a, b, c, ints=(n,))
    y = (a * b).astype(np.float16)            # each numpy float16 operation rounds to nearest even
    y = (y + a).astype(np.float16)
    f = y.astype(np.float32).view(np.uint32).astype(np.uint64)
    # float -> bfloat16, round to nearest even on the dropped 16 bits
    expected = ((f + 0x7FFF + ((f >> 16) & 1)) >> 16).astype(np.uint16)
    np.testing.assert_array_equal(c, expected)


def test_datacopy_tail_is_silently_dropped(fidelity):
    a, c = randn(13), nan(13)
    run = run3(fidelity, "tail_drop", 1, a, np.zeros(8, np.float32), c, ints=(13,))
    np.testing.assert_array_equal(c[:8], a[:8] * 3)
    assert np.isnan(c[8:]).all(), "DataCopy moved a partial 32-byte block"
    assert any("tail not copied" in note and "kernel.cpp:" in note for note in run.profile["notes"])


def test_the_mask_set_beforehand_in_normal_and_counter_mode(fidelity):
    a, c = randn(256), nan(512)
    run3(fidelity, "preset_mask", 1, a, randn(8), c)
    expected = a.copy()
    expected[0::2] *= 2
    np.testing.assert_array_equal(c[:256], expected)
    np.testing.assert_array_equal(c[256:], np.where(np.arange(256) < 200, 7.0, 0.0).astype(np.float32))


def test_blocks_exchange_data_across_syncall(fidelity):
    # without the barrier the same read is a block-race fault (faults/block_race.cpp)
    a, c = randn(8), nan(1024)
    run3(fidelity, "syncall_exchange", 4, a, randn(8), c)
    got = c[:64].reshape(4, 16)
    np.testing.assert_array_equal(got[:, :8], np.repeat(np.arange(1, 5, dtype=np.float32)[:, None], 8, axis=1))
    np.testing.assert_array_equal(got[:, 8:], np.repeat(np.array([2, 3, 4, 1], dtype=np.float32)[:, None], 8, axis=1))
