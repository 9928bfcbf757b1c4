"""The second, awkward size of every correctness check (issue 45.1): chosen from the task's own
size constants, checked against the reference at those sizes, on cpu and npu-twin (cuda: the
same worker path, run where a GPU is; its tests skip here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from npu_pool.tasks.spec import load_task
from npu_pool.tasks.tail_sizes import awkward, describe, largest_prime_at_most
from npu_pool.verdict import Candidate
from npu_pool.verifier import verify

from ..harness_support import (
    A3_CANDIDATES,
    SMALL_BYTES,
    SUITE,
    candidate_file,
    fixture_task,
    harness_config,
)

TAILS = A3_CANDIDATES / "tails"


def _kernel(path: Path) -> Candidate:
    return Candidate(source=path.read_text(), format="kernel")


@pytest.fixture(scope="module")
def relu_task():
    return load_task(SUITE / "level1" / "4_ReLU.py", max_bytes=SMALL_BYTES)


def test_awkward_sizes_are_primes_near_half_and_small_constants_stay():
    assert [awkward(v) for v in (16, 32, 128, 256, 4096, 16384)] == [7, 13, 61, 127, 2039, 8191]
    assert awkward(8) is None and awkward(3) is None  # kernel sizes, heads, groups: not extents
    assert largest_prime_at_most(1) is None and largest_prime_at_most(2) == 2


def test_every_size_of_an_elementwise_task_becomes_awkward_and_cheaper(relu_task):
    assert relu_task.sizes == {"batch_size": 128, "dim": 4096}
    assert relu_task.second_sizes == {"batch_size": 61, "dim": 2039}
    assert "batch_size = 61" in relu_task.second_source and "dim = 2039" in relu_task.second_source
    shapes = {a.name: a.shape for a in relu_task.second_signature.args if a.is_tensor}
    assert shapes == {"x": [61, 2039], "out": [61, 2039]}
    assert relu_task.second_signature.declaration() == relu_task.kernel_signature.declaration()


def test_sizes_tied_by_a_rule_change_together_or_stay():
    # GroupNorm: out_features must stay a multiple of num_groups, so the tied in/out features keep
    # their value and only the batch changes
    task = load_task(SUITE / "level2" / "14_LinearGroupNormReLU.py")
    changed = {n for n, v in task.second_sizes.items() if task.sizes[n] != v}
    assert changed == {"batch_size"} and task.second_sizes["batch_size"] % 2 == 1


def test_a_task_whose_sizes_its_module_fixes_says_so_and_checks_the_task_size_only():
    task = fixture_task("fixed_view")
    assert task.second_sizes is None and "fixed by its module" in task.second_size_note
    good = 'extern "C" void kernel(const float* x, const float* weight, float* out, int64_t x_d0, int64_t weight_d0,' \
           ' int64_t weight_d1, int64_t out_d0, int64_t out_d1) {\n' \
           '  for (int i = 0; i < 32; ++i) for (int j = 0; j < 32; ++j) { float s = 0;\n' \
           '    for (int k = 0; k < 32; ++k) s += x[i * 32 + k] * weight[k * 32 + j]; out[i * 32 + j] = s; } }\n'
    verdict = verify(task, Candidate(source=good, format="kernel"), harness_config())
    assert verdict.feasible, verdict.details
    assert "fixed by its module" in verdict.reason and "checked at the task size only" in verdict.reason


def test_a_good_kernel_passes_at_both_sizes(relu_task):
    good = _kernel(A3_CANDIDATES / "good_kernel" / "9_LeakyReLU.cpp")
    verdict = verify(load_task(SUITE / "level1" / "9_LeakyReLU.py", max_bytes=SMALL_BYTES), good, harness_config())
    assert verdict.feasible, verdict.details
    assert "trials matched at the second size (batch_size=61, dim=2039)" in verdict.reason


def test_a_kernel_that_skips_the_partial_last_tile_fails_at_the_second_size(relu_task):
    verdict = verify(relu_task, _kernel(TAILS / "relu_whole_tiles.cpp"), harness_config())
    assert (verdict.feasible, verdict.gate) == (False, "correctness"), verdict
    assert verdict.reason.startswith("at the second size (batch_size=61, dim=2039): output 0 differs")
    assert "input shapes: [61, 2039]" in verdict.details and "partial tile" in verdict.details


def test_a_kernel_that_ignores_its_size_arguments_fails_at_the_second_size(relu_task):
    verdict = verify(relu_task, _kernel(TAILS / "relu_fixed_size.cpp"), harness_config())
    assert not verdict.feasible and verdict.gate in ("runtime", "correctness"), verdict
    # a crash names the stage, an exception or a mismatch the reason: either way the size
    assert "at the second size (batch_size=61, dim=2039)" in verdict.reason, verdict.reason


@pytest.mark.slow  # one load_inline build of its own (about a minute)
def test_a_modelnew_that_zeroes_the_partial_last_tile_fails_at_the_second_size():
    task = load_task(SUITE / "level1" / "9_LeakyReLU.py", max_bytes=SMALL_BYTES)
    verdict = verify(task, candidate_file(TAILS / "leaky_relu_whole_tiles_modelnew.py"), harness_config())
    assert (verdict.feasible, verdict.gate) == (False, "correctness"), verdict
    assert verdict.reason.startswith("at the second size (batch_size=61, dim=2039): output 0 differs"), verdict.reason


def test_the_second_size_can_be_turned_off(relu_task):
    verdict = verify(relu_task, _kernel(TAILS / "relu_whole_tiles.cpp"), harness_config(second_size_trials=0))
    assert verdict.feasible and "harness.second_size_trials: 0" in verdict.reason


def test_describe_names_what_changed():
    assert describe({"a": 61, "k": 3}, {"a": 128, "k": 3}) == "a=61"
    assert describe({"a": 61}) == "a=61"


@pytest.fixture(scope="module")
def twin_relu_task():
    return load_task(SUITE / "level1" / "4_ReLU.py", max_bytes=SMALL_BYTES // 16)


def test_an_ascend_c_relu_that_skips_the_last_partial_tile_fails_on_the_twin(twin_relu_task):
    config = harness_config(backend="npu-twin", fit_max_bytes=SMALL_BYTES // 16, correctness_trials=2)
    assert twin_relu_task.sizes == {"batch_size": 128, "dim": 256}
    bad = verify(twin_relu_task, _kernel(TAILS / "twin_relu_skips_partial_tile.cpp"), config)
    assert not bad.feasible and bad.reason.startswith("at the second size (batch_size=61, dim=127)"), bad
    good = verify(twin_relu_task, _kernel(A3_CANDIDATES / "npu_twin" / "relu_good.cpp"), config)
    assert good.feasible and "at the second size (batch_size=61, dim=127)" in good.reason, good.details


def test_a_cuda_kernel_that_drops_the_partial_last_block_fails_at_the_second_size(relu_task):
    from npu_pool.backends import backend_ready

    ready, why = backend_ready("cuda", "kernel")
    if not ready:
        pytest.skip(why)
    config = harness_config(backend="cuda")
    bad = verify(relu_task, _kernel(TAILS / "cuda_relu_whole_blocks.cu"), config)
    assert not bad.feasible and bad.reason.startswith("at the second size (batch_size=61, dim=2039)"), bad
    good = verify(load_task(SUITE / "level1" / "9_LeakyReLU.py", max_bytes=SMALL_BYTES),
                  _kernel(A3_CANDIDATES / "cuda_kernel" / "9_LeakyReLU.cu"), config)
    assert good.feasible and "at the second size" in good.reason, good.details
