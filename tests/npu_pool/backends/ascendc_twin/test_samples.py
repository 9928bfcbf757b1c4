"""The fidelity suite: kernels we wrote in the style of the published Ascend C samples
(kernels/samples/: classic TQue, the allocator style with hand-set flags, library APIs with
host tiling, the Matmul library, SyncAll across blocks, GatherMask and counter mode), run in
their two-half form as the npu-twin launcher runs them (host half, then the launch on its
blocks, tiling and workspace), each checked against numpy. Each test says what a device would
do with the kernel; docs/ascendc_twin.md has the table."""

from __future__ import annotations

import numpy as np

from tests.npu_pool.backends.ascendc_twin.twin_support import make_tiling

RNG = np.random.default_rng(7)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def nan(*shape, dtype=np.float32):
    return np.full(shape, np.nan, dtype=dtype)


def clean(run):
    assert run.rc == 0 and run.fault == "", run.fault
    return run


def test_classic_tque_add_on_the_hosts_eight_blocks(samples):
    # device: the same sums (Add rounds once), on 8 of the cores; the host's uneven split
    # leaves the last block shorter
    n = 8 * 1000 + 8
    x, y, z = randn(n), randn(n), nan(n)
    run = clean(samples.run_two_halves("add_classic", [("x", x, 0), ("y", y, 0), ("z", z, 1)], make_tiling((n, 256))))
    np.testing.assert_array_equal(z, x + y)
    assert run.profile["blocks"] == 8 and run.profile["double_buffered_blocks"] == 8


def test_allocator_style_leaky_relu_with_hand_set_flags(samples):
    # device: identical values; the flags order MTE2 -> V -> MTE3 -> MTE2 as the twin checks
    # (a WaitFlag without its SetFlag would hang); the block count is the host's
    n = 5000  # not a multiple of 8 floats: DataCopyPad's tail
    x, y = randn(n), nan(n)
    run = clean(samples.run_two_halves("leakyrelu_allocator", [("x", x, 0), ("y", y, 1)], make_tiling((n, 1024), (0.1,))))
    np.testing.assert_array_equal(y, np.where(x >= 0, x, x * np.float32(0.1)))
    assert run.profile["blocks"] == 5


def test_unaligned_rows_sum_and_reduce_pattern_max(samples):
    # device: the same maxima; sums may differ in the last bits (the device's Sum adds in its
    # own order), hence the tolerance; rows of 37 floats are padded in UB by DataCopyPad
    rows, cols = 45, 37
    x, sums, maxima = randn(rows, cols), nan(rows), nan(rows)
    clean(samples.run_two_halves("rows_unaligned", [("x", x, 0), ("sums", sums, 1), ("maxima", maxima, 1)],
                                 make_tiling((rows, cols))))
    np.testing.assert_allclose(sums, x.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(maxima, x.max(axis=1))


def test_softmax_library_with_host_tiling_and_adjust(samples):
    # device: values within float rounding of these (its exp differs in the last bits); the max
    # output is one 32-byte block per row; a row whose maximum is -FLT_MAX becomes 0
    rows, cols = 30, 128
    x = randn(rows, cols)
    x[3] = -3.4028235e38
    maxima, y = nan(rows, 8), nan(rows, cols)
    run = clean(samples.run_two_halves("softmax_lib", [("x", x, 0), ("maxima", maxima, 1), ("y", y, 1)],
                                       make_tiling((rows, cols))))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)
    expected[3] = 0.0
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(maxima, np.repeat(x.max(axis=1, keepdims=True), 8, axis=1))
    assert run.profile["blocks"] == 15  # 2 rows a block: 30 rows need 15 of the 24 cores


def test_layernorm_then_sigmoid_through_the_library(samples):
    # device: within float rounding (its rsqrt and exp are not IEEE-exact)
    b, s, h = 3, 5, 64
    x, gamma, beta = randn(b, s, h), randn(h), randn(h)
    y, mean, var = nan(b, s, h), nan(b * s), nan(b * s)
    run = clean(samples.run_two_halves(
        "sigmoid_layernorm_lib",
        [("x", x, 0), ("gamma", gamma, 0), ("beta", beta, 0), ("y", y, 1), ("mean", mean, 1), ("var", var, 1)],
        make_tiling((b, s, h), (1e-5,))))
    mu, sigma2 = x.mean(axis=2), x.var(axis=2)
    norm = (x - mu[..., None]) / np.sqrt(sigma2[..., None] + 1e-5) * gamma + beta
    np.testing.assert_allclose(y, 1 / (1 + np.exp(-norm)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mean, mu.ravel(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, sigma2.ravel(), rtol=1e-4, atol=1e-6)
    assert run.profile["blocks"] == b


def test_matmul_library_with_multicore_tiling_and_the_frameworks_workspace(samples):
    # device: half products accumulated in float (L0C), as here; the tiling's base blocks fit
    # L0A/L0B/L0C; usedCoreNum blocks, each a share of rows and columns (SetDim(GetCoreNumAiv()):
    # 48 vector cores on Ascend910B1, of which the twin's tiling uses 30 for 96 x 80)
    m, n, k = 96, 80, 64
    a, b = randn(m, k, dtype=np.float16), randn(k, n, dtype=np.float16)
    c = nan(m, n)
    run = clean(samples.run_two_halves("matmul_lib", [("a", a, 0), ("b", b, 0), ("c", c, 1)], make_tiling((m, n, k))))
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4, atol=1e-3)
    assert run.profile["blocks"] == 30 and run.profile["cube_macs"]["16bit"] > 0


def test_mse_loss_across_blocks_with_syncall(samples):
    # device: SyncAll is a hardware barrier of all cores; block 0 reads the others' partial sums
    # from the workspace only after it (the twin runs each block on its own thread and resumes
    # them together after the barrier); the sum's order differs from numpy's in the last bits
    n = 10_000
    x, y, out = randn(n), randn(n), nan(8)
    run = clean(samples.run_two_halves("mse_syncall", [("x", x, 0), ("y", y, 0), ("out", out, 1)], make_tiling((n,))))
    np.testing.assert_allclose(out[0], np.mean((x - y) ** 2), rtol=1e-5)
    assert run.profile["blocks"] == 8


def test_mse_loss_carries_every_flag_without_the_compilers_automatic_synchronisation(samples):
    # built without --cce-auto-sync, PIPE_S needs its own flags (V_S, S_V, MTE2_S): the sample has them
    n = 10_000
    x, y, out = randn(n), randn(n), nan(8)
    samples.lib.evk_twin_set_auto_sync(0)
    try:
        clean(samples.run_two_halves("mse_syncall", [("x", x, 0), ("y", y, 0), ("out", out, 1)], make_tiling((n,))))
    finally:
        samples.lib.evk_twin_set_auto_sync(1)
    np.testing.assert_allclose(out[0], np.mean((x - y) ** 2), rtol=1e-5)


def test_syncall_with_more_blocks_than_cores_would_hang(samples):
    # the kernel's SyncAll needs every block resident: more blocks than vector cores would hang
    # (4 AI cores of Ascend910B1's kind: 8 vector cores)
    n = 10_000
    x, y, out = randn(n), randn(n), nan(8)
    tiling, _, workspace = samples.host("mse_syncall", make_tiling((n,)), ai_cores=4)
    run = samples.run("mse_syncall", 10, [("x", x, 0), ("y", y, 0), ("out", out, 1)], tiling, ai_cores=4,
                      workspace_bytes=(16 << 20) + 10 * 32)
    assert run.rc == 1 and run.fault_parts()["rule"] == "sync-all" and "10 blocks on 8 vector cores" in run.fault


def test_gather_mask_then_counter_mode_kernel_only_form(samples):
    # device: the same values; counter mode makes the Adds cover exactly the gathered count
    n = 4 * 1024
    x, y = randn(n), nan(n // 2)
    clean(samples.run("gather_count", 4, [("x", x, 0), ("y", y, 1)], make_tiling((n,))))
    np.testing.assert_array_equal(y, x[1::2] + np.float32(1))


def test_static_tensor_add_with_the_builtin_block_index(samples):
    # device: the same sums; UB holds 3 x 8 KiB per block (the allocator's capacity rule is TPipe's)
    x, y, z = randn(8 * 2048), randn(8 * 2048), nan(8 * 2048)
    run = clean(samples.run("add_allocator", 8, [("x", x, 0), ("y", y, 0), ("z", z, 1)], make_tiling()))
    np.testing.assert_array_equal(z, x + y)
    assert run.profile["blocks"] == 8
