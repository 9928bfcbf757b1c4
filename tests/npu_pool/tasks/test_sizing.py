"""Size fitting: size constants found by tracing shapes, axes left alone, budgets met."""

from __future__ import annotations

import pytest

from npu_pool.tasks.sizing import fit_sizes, int_constants, size_constants, with_constants
from npu_pool.tasks.spec import load_task

from ..harness_support import FIXTURES, SMALL_BYTES, SUITE


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


# Synthetic tasks in the public suite's style: sizes written as expressions and tuples.
_MATMUL = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)


M = 1024 * 2
K = 4096 * 2
N = M * 2  # derived: follows M


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs():
    return []
'''

_HINGE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


batch_size = 32768
input_shape = (32768,)  # broadcast against (batch_size,): tied to batch_size
dim = 1


def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]


def get_init_inputs():
    return []
'''

_BIAS = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, bias_shape):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return x + self.bias


batch_size = 16
channels = 64
height = width = 256
bias_shape = (channels, 1, 1)


def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]


def get_init_inputs():
    return [bias_shape]
'''


def test_expression_tuple_and_derived_constants_are_read():
    assert int_constants(_MATMUL) == {"M": 2048, "K": 8192, "N": 4096}
    assert int_constants(_HINGE) == {"batch_size": 32768, "input_shape[0]": 32768, "dim": 1}
    src = "a = 2 ** 5 - 3 % 2\nb = -a // 3\nshape = [a, (b, 7)]\nd, h, w = 8, 16, 32\nh2 = w2 = 9\n"
    assert int_constants(src) == {"a": 31, "b": -11, "shape[0]": 31, "shape[1][0]": -11, "shape[1][1]": 7,
                                  "d": 8, "h": 16, "w": 32, "h2": 9, "w2": 9}


def test_bools_floats_strings_and_true_division_stay_untouched():
    src = "flag = True\nscale = 2.0\nname = 'x'\nhalf = 7 / 2\nmix = (1.5, 3)\nn = flag * 4\n"
    assert int_constants(src) == {"mix[1]": 3}
    assert with_constants(src, {"flag": 0, "scale": 1, "half": 1, "n": 1}) == src


def test_rewrite_replaces_independent_expressions_and_keeps_derived_ones():
    out = with_constants(_MATMUL, {"M": 64, "K": 128, "N": 5})
    assert "M = 64\n" in out and "K = 128\n" in out
    assert "N = M * 2  # derived: follows M\n" in out  # never rewritten: it follows M
    assert int_constants(out) == {"M": 64, "K": 128, "N": 128}
    assert with_constants(_HINGE, {"input_shape[0]": 8}).count("input_shape = (8,)") == 1
    assert with_constants(_MATMUL, {"M": 2048}) == _MATMUL  # unchanged values keep their text


def test_hostile_expression_is_never_evaluated(tmp_path):
    marker = tmp_path / "evaluated"
    src = (f"N = __import__('pathlib').Path({str(marker)!r}).touch() or 5\n"
           "P = open('/dev/null').fileno()\nQ = N * 2\nbig = 10 ** 10 ** 9\nhuge = 3 ** 64\nzero = 1 // 0\n"
           "ok = 4 * 2\n")
    assert int_constants(src) == {"ok": 8}
    assert with_constants(src, {"N": 3, "Q": 3, "big": 3, "ok": 16}) == src.replace("ok = 4 * 2", "ok = 16")
    assert not marker.exists()


def test_rebinding_a_constant_forgets_it():
    assert int_constants("M = 4\nN = M * 2\nfor M in range(3):\n    pass\nK = M * 2\n") == {"N": 8}


def test_expression_sizes_fit_with_derived_constants_consistent():
    assert size_constants(_MATMUL) == {"M": 2048, "K": 8192}
    fit = fit_sizes(_MATMUL, max_bytes=64 * 2**20, max_gflop=2.0)
    assert fit.probe.tensor_bytes <= 64 * 2**20 and fit.probe.flops <= 2e9
    m, k = fit.sizes["M"], fit.sizes["K"]
    a, b = fit.probe.inputs
    assert list(a.shape) == [m, k] and list(b.shape) == [k, 2 * m]
    assert f"M = {m}\n" in fit.source and "N = M * 2" in fit.source


def test_tied_tuple_size_shrinks_with_its_partner():
    assert size_constants(_HINGE) == {"batch_size": 32768, "input_shape[0]": 32768}
    fit = fit_sizes(_HINGE, max_bytes=SMALL_BYTES, max_gflop=2.0)
    assert fit.probe.tensor_bytes <= SMALL_BYTES and fit.probe.outputs is not None
    assert fit.sizes["batch_size"] == fit.sizes["input_shape[0]"] < 32768
    assert "dim = 1\n" in fit.source


def test_broadcast_ones_in_a_shape_tuple_are_not_sizes():
    assert size_constants(_BIAS) == {"batch_size": 16, "channels": 64, "height": 256}  # width follows height
    fit = fit_sizes(_BIAS, max_bytes=SMALL_BYTES, max_gflop=2.0)
    (x,) = fit.probe.inputs
    assert fit.probe.tensor_bytes <= SMALL_BYTES
    assert x.shape[2] == x.shape[3] == fit.sizes["height"]
    assert fit.probe.params["bias"][0] == [x.shape[1], 1, 1]


def test_load_task_with_expression_sizes(tmp_path):
    path = tmp_path / "5_Matmul.py"
    path.write_text(_MATMUL)
    task = load_task(path)
    assert task.original_sizes == {"M": 2048, "K": 8192}
    assert task.tensor_bytes <= 64 * 2**20 and task.flops <= 2e9
    assert task.inputs[1].shape == [task.sizes["K"], 2 * task.sizes["M"]]
