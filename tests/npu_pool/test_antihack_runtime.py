"""The runtime op recorder: torch compute that ran inside forward is rejected whatever
route it took (Python operators, methods, C++ extensions calling ATen); the allocation,
views and fills of a kernel wrapper pass."""

from __future__ import annotations

import re

import pytest
import torch

from npu_pool.antihack_runtime import judge_ops, record_torch_ops, run_recorded
from npu_pool.backends import get_backend
from npu_pool.tasks import load_task

from .harness_support import A3_CANDIDATES, SMALL_BYTES, SUITE


def _rejected(findings):
    return {re.search(r"\w+::\w+", f.message).group(0) for f in findings if f.severity == "reject"}


def test_torch_compute_is_recorded_whatever_the_spelling():
    x, w = torch.randn(8, 8), torch.randn(8, 8)
    alias = torch.nn.functional.relu
    _, findings = run_recorded(lambda: (alias(x), x + 1, x @ w, x.sum(), torch.ops.aten.sigmoid(x)))
    assert _rejected(findings) == {"aten::relu", "aten::add", "aten::mm", "aten::sum", "aten::sigmoid"}


def test_wrapper_plumbing_passes():
    x = torch.randn(4, 6)

    def wrapper(t):
        t = t.contiguous().view(-1).reshape(6, 4).t()
        out = torch.empty_like(t)
        out.zero_()
        scratch = torch.zeros(3)
        scratch.fill_(2.0)
        torch.full((2,), float("nan"))
        return out[:, 1:3], t.shape, t.stride(), t.data_ptr()

    _, findings = run_recorded(wrapper, x)
    assert findings == []


def test_copies_are_warned_and_aliasing_rejected():
    x = torch.randn(5)
    out = torch.empty(5)
    with record_torch_ops() as ops:
        out.copy_(x)
        x.t().clone()
        out.set_(x)
    findings = judge_ops(ops)
    assert {(f.rule, f.severity) for f in findings} == {("runtime_copy", "warn"), ("alias", "reject")}


def test_the_candidates_own_operator_namespace_is_its_kernel():
    @torch.library.custom_op("evk_test_ns::scale2", mutates_args=())
    def scale2(x: torch.Tensor) -> torch.Tensor:
        return x.clone()  # runs below the custom op, not seen as a separate forward op here

    _, findings = run_recorded(torch.ops.evk_test_ns.scale2, torch.randn(3))
    assert all(f.severity != "reject" for f in findings)


def test_the_kernel_format_wrapper_runs_no_torch_compute(tmp_path):
    task = load_task(SUITE / "level1" / "9_LeakyReLU.py", max_bytes=SMALL_BYTES)
    cpu = get_backend("cpu")
    source = (A3_CANDIDATES / "good_kernel" / "9_LeakyReLU.cpp").read_text()
    artifact = cpu.compile_kernel(source, task.kernel_signature, tmp_path, tmp_path / "cache")

    class Reference(torch.nn.Module):
        pass

    module = cpu.wrap_kernel(artifact, task.kernel_signature, Reference())
    x = torch.randn(*task.inputs[0].shape)
    out, findings = run_recorded(module, x)
    assert findings == []
    torch.testing.assert_close(out, torch.nn.functional.leaky_relu(x, task.kernel_signature.init_args["negative_slope"]))


@pytest.mark.slow
def test_aten_called_from_a_cpp_extension_is_caught():
    from torch.utils.cpp_extension import load_inline

    from npu_pool.paths import cache_root

    build = cache_root() / "test-build" / "antihack-runtime-ext"
    build.mkdir(parents=True, exist_ok=True)
    # `x + x` on torch::Tensor in C++: the static gate cannot type it, the dispatcher sees it
    ext = load_inline(name="evk_test_cpp_add", cpp_sources="torch::Tensor twice(torch::Tensor x) { return x + x; }",
                      functions=["twice"], build_directory=str(build))
    _, findings = run_recorded(ext.twice, torch.randn(4))
    assert _rejected(findings) == {"aten::add"}
