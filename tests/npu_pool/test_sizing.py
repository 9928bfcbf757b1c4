"""Size fitting: size constants found by tracing shapes, axes left alone, budgets met."""

from __future__ import annotations

import pytest

from npu_pool.sizing import fit_sizes, int_constants, size_constants, with_constants
from npu_pool.tasks import load_task

from .harness_support import FIXTURES, SMALL_BYTES, SUITE


def _source(name: str) -> str:
    return (FIXTURES / "tasks" / f"{name}.py").read_text()


def test_int_constants_and_rewrite_keep_everything_else():
    src = _source("huge_softmax_axis")
    assert int_constants(src) == {"batch_size": 256, "rows": 4096, "cols": 8192, "dim": 2}
    rewritten = with_constants(src, {"rows": 16})
    assert int_constants(rewritten)["rows"] == 16
    assert rewritten.replace("rows = 16", "rows = 4096") == src


def test_reduction_axis_is_not_a_size():
    assert size_constants(_source("huge_softmax_axis")) == {"batch_size": 256, "rows": 4096, "cols": 8192}


def test_size_seen_only_through_a_parameter_shape_is_a_size():
    assert size_constants(_source("huge_linear")) == {"batch_size": 1024, "in_features": 16384, "out_features": 16384}


def test_hyperparameter_that_changes_no_shape_is_not_a_size():
    assert size_constants(_source("slow_reference_relu")) == {"batch_size": 64, "dim": 4096}


@pytest.mark.parametrize("name", ["huge_relu", "huge_softmax_axis", "huge_linear"])
def test_fit_meets_the_budget_without_allocating(name):
    fit = fit_sizes(_source(name), max_bytes=SMALL_BYTES, max_gflop=0.5)
    assert fit.shrunk
    assert fit.probe.tensor_bytes <= SMALL_BYTES
    assert fit.probe.flops <= 0.5e9
    assert set(fit.sizes) == set(fit.original)
    assert all(8 <= fit.sizes[n] <= fit.original[n] for n in fit.sizes)


def test_load_task_fits_and_records_sizes():
    task = load_task(FIXTURES / "tasks" / "huge_relu.py", max_bytes=SMALL_BYTES)
    assert task.original_sizes == {"batch_size": 4096, "dim": 393216}
    assert task.sizes != task.original_sizes
    assert task.inputs[0].shape == [task.sizes["batch_size"], task.sizes["dim"]]
    assert task.outputs[0].shape == task.inputs[0].shape
    assert f"batch_size = {task.sizes['batch_size']}" in task.source


def test_original_sizes_are_kept_when_asked():
    task = load_task(FIXTURES / "tasks" / "huge_relu.py", sizes="original")
    assert task.sizes == task.original_sizes == {"batch_size": 4096, "dim": 393216}
    assert task.inputs[0].shape == [4096, 393216]  # shapes from the meta device: nothing allocated
    assert task.source == task.original_source


def test_suite_task_with_axis_constant_keeps_it():
    task = load_task(SUITE / "level1" / "14_SumOverDim.py", max_bytes=SMALL_BYTES)
    assert "dim" not in task.sizes
    assert task.init_inputs == [1]
