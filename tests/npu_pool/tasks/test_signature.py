"""The kernel-format entry point derived from the reference (docs/contracts.md)."""

from __future__ import annotations

from npu_pool.tasks.spec import load_task

from ..harness_support import FIXTURES, SMALL_BYTES


def _names(task):
    return [a.name for a in task.kernel_signature.args]


def test_linear_signature_order_inputs_parameters_outputs_scalars_sizes():
    task = load_task(FIXTURES / "tasks" / "huge_linear.py", max_bytes=SMALL_BYTES)
    assert _names(task) == [
        "x", "linear_weight", "linear_bias", "out", "in_features", "out_features",
        "x_d0", "x_d1", "linear_weight_d0", "linear_weight_d1", "linear_bias_d0", "out_d0", "out_d1",
    ]
    decl = task.kernel_signature.declaration()
    assert decl.startswith('extern "C" void kernel(const float* x, const float* linear_weight, const float* linear_bias, float* out, int64_t in_features')


def test_two_outputs_and_float_constructor_argument():
    task = load_task(FIXTURES / "tasks" / "sum_and_product.py")
    sig = task.kernel_signature
    assert [a.name for a in sig.by_role("output")] == ["out0", "out1"]
    assert [(a.name, a.ctype) for a in sig.by_role("scalar")] == [("scale", "double")]
    assert sig.init_args == {"scale": 0.5}


def test_render_documents_every_argument():
    task = load_task(FIXTURES / "tasks" / "huge_linear.py", max_bytes=SMALL_BYTES)
    text = task.render_kernel_signature()
    assert 'extern "C" void kernel(' in text
    for arg in task.kernel_signature.args:
        line = next(line for line in text.splitlines() if f" {arg.name}," in line or f" {arg.name} " in line)
        assert "//" in line
    assert "parameter, float32" in text and "constructor argument in_features" in text
