"""A kernel shown in the task's own terms (actors/renaming.py, issue 54 point 3): identifiers only,
on C, CUDA and Ascend C kernels, and nothing shown where the signatures do not map."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.renaming import in_task_terms, rename_identifiers
from actors.signature_shape import renaming, signature_shape
from memory_actor.items import MemoryItem
from memory_actor.seeding import example_items
from npu_pool.backends import get_backend
from npu_pool.tasks.spec import load_task
from tests.npu_pool.harness_support import SMALL_BYTES

SUITE = Path(__file__).resolve().parents[2] / "suites" / "cpu" / "level1"

# log(1 + |v|) like the bundles' elementwise example (ex1_Log1pAbs), but its input is `values`
# and its sizes another shape of the same rank: the example renamed is this task's kernel.
LOG1P_ABS_VALUES = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, values: torch.Tensor) -> torch.Tensor:
        return torch.log1p(torch.abs(values))


rows = 48
cols = 1000


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
'''


@pytest.fixture(scope="module")
def values_task(tmp_path_factory):
    path = tmp_path_factory.mktemp("renaming") / "t1_Log1pAbsValues.py"
    path.write_text(LOG1P_ABS_VALUES)
    return load_task(path, max_bytes=SMALL_BYTES)


def rendered(backend: str, task) -> str:
    return get_backend(backend).render_kernel_signature(task.kernel_signature)


def test_identifiers_only_never_inside_names_strings_comments_or_includes():
    code = ('#include <x_d0.h>\n'
            'static float x_scale = 1e-5f;  // x and out: copy-out of x\n'
            'extern "C" void kernel(const float* x, float* out, int64_t x_d0) {\n'
            '    const char* label = "x out";\n'
            '    for (int64_t i = 0; i < x_d0; ++i) out[i] = x[i] * x_scale + .5f + p.x + ns::out;\n'
            '}\n')
    renamed = rename_identifiers(code, {"x": "values", "out": "y", "x_d0": "n"})
    assert renamed == ('#include <x_d0.h>\n'
                       'static float x_scale = 1e-5f;  // x and out: copy-out of x\n'
                       'extern "C" void kernel(const float* values, float* y, int64_t n) {\n'
                       '    const char* label = "x out";\n'
                       '    for (int64_t i = 0; i < n; ++i) y[i] = values[i] * x_scale + .5f + p.x + ns::out;\n'
                       '}\n')


def test_names_are_replaced_at_once_so_a_swap_works_and_a_collision_refuses():
    assert rename_identifiers("a = b + a;", {"a": "b", "b": "a"}) == "b = a + b;"
    # the task calls its input `n`, which the item already uses for its own count: not the same thing
    assert rename_identifiers("int64_t n = x_d0; x[n - 1] = 0;", {"x": "n", "x_d0": "len"}) is None
    assert rename_identifiers("x[0] = 1;", {"x": "x"}) == "x[0] = 1;"  # nothing to change


def test_c_the_family_example_in_the_tasks_names_passes_the_real_gates(values_task, harness_config):
    from npu_pool.verdict import Candidate
    from npu_pool.verifier import verify

    example = example_items("cpu")["elementwise"]
    shown = in_task_terms(example, rendered("cpu", values_task))
    assert shown is not None and shown.item.id == example.id  # the credit stays the example's
    assert shown.renamed == {"x": "values", "x_d0": "values_d0", "x_d1": "values_d1"}
    assert "const float* values" in shown.item.content and "const float* x" not in shown.item.content
    assert shown.signature == rendered("cpu", values_task)
    verdict = verify(values_task, Candidate(source=shown.item.content, format="kernel"), harness_config)
    assert verdict.feasible, f"{verdict.gate}: {verdict.reason}\n{verdict.details}"
    assert "x_d0" in example.content  # the bank's item itself is unchanged


def test_cuda_members_of_cuda_builtins_are_not_arguments(values_task):
    example = example_items("cuda")["elementwise"]
    assert "threadIdx.x" in example.content
    shown = in_task_terms(example, rendered("cuda", values_task))
    assert shown is not None and shown.renamed == {"x": "values", "x_d0": "values_d0", "x_d1": "values_d1"}
    code = shown.item.content
    assert "threadIdx.x" in code and "blockDim.x" in code and "blockIdx.x" in code
    assert "threadIdx.values" not in code and "cudaStream_t stream" in code
    assert "log1p_abs_kernel<<<blocks, threads, 0, stream>>>(values, out, n)" in code


def test_ascendc_tensor_addresses_and_tiling_fields_are_renamed(values_task):
    example = example_items("npu-twin")["elementwise"]
    signature = rendered("npu-twin", values_task)
    assert signature_shape(signature) == signature_shape(example.task_signature)
    shown = in_task_terms(example, signature)
    assert shown is not None
    assert shown.renamed == {"x": "values", "x_d0": "values_d0", "x_d1": "values_d1"}
    code = shown.item.content
    assert "GM_ADDR values" in code and "GM_ADDR x," not in code
    assert "t.x_d0" not in code and "t.values_d0" in code and "GM_ADDR workspace, GM_ADDR tiling" in code


@pytest.mark.slow
def test_ascendc_the_family_example_in_the_tasks_names_passes_the_twins_gates(values_task):
    from npu_pool.verdict import Candidate
    from npu_pool.verifier import verify
    from tests.npu_pool.harness_support import harness_config as twin_config

    shown = in_task_terms(example_items("npu-twin")["elementwise"], rendered("npu-twin", values_task))
    assert shown is not None
    verdict = verify(values_task, Candidate(source=shown.item.content, format="kernel"),
                     twin_config(backend="npu-twin", correctness_trials=2))
    assert verdict.feasible, f"{verdict.gate}: {verdict.reason}\n{verdict.details}"


@pytest.mark.parametrize("backend", ["cpu", "cuda", "npu-twin"])
def test_an_item_of_another_shape_is_not_shown(backend):
    # the row-reduction example reduces a 2-d input to 1-d without a `dim`; Sum over a dimension
    # keeps the axis and takes `dim`: another shape, so no renaming and no showing
    task = load_task(SUITE / "14_SumOverDim.py", max_bytes=SMALL_BYTES)
    example = example_items(backend)["row_reduction"]
    signature = rendered(backend, task)
    assert signature_shape(signature) != signature_shape(example.task_signature)
    assert renaming(example.task_signature, signature) is None
    assert in_task_terms(example, signature) is None
    trace = MemoryItem(kind="trace", backend=backend, task_id="other", content=example.content,
                       task_signature=example.task_signature)
    assert in_task_terms(trace, signature) is None
    assert in_task_terms(trace.model_copy(update={"task_signature": ""}), signature) is None


def test_ascendc_shapes_see_the_tiling_fields_not_only_the_addresses(values_task, tmp_path):
    # one input and one output in both, so the GM_ADDR lists agree; but a 1-d task's KernelTiling
    # has two sizes where the 2-d example has four: its `x_d1` would not exist
    one_d = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


n = 4096


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
'''
    path = tmp_path / "t2_ReLU1d.py"
    path.write_text(one_d)
    task = load_task(path, max_bytes=SMALL_BYTES)
    example = example_items("npu-twin")["elementwise"]
    assert in_task_terms(example, rendered("npu-twin", task)) is None
    assert in_task_terms(example, rendered("npu-twin", values_task)) is not None


def test_what_holds_no_kernel_or_meets_no_signature_is_shown_as_it_is():
    lesson = MemoryItem(kind="experience", backend="cpu", content="keep x in a register", tags=["lesson:fix"])
    assert in_task_terms(lesson, 'extern "C" void kernel(const float* y, float* out);').item is lesson
    trace = MemoryItem(kind="trace", backend="cpu", content="class ModelNew: ...", task_signature="")
    shown = in_task_terms(trace, None)  # a ModelNew task: no signature to rename into
    assert shown is not None and shown.item is trace and shown.renamed == {}


@pytest.mark.slow  # nvcc takes ~20 s a unit; builds are cached by source
def test_cuda_the_family_example_in_the_tasks_names_builds_with_nvcc_and_passes_where_there_is_a_gpu(
        values_task, tmp_path):
    from npu_pool.backends import backend_ready, cuda_kernel
    from npu_pool.backends import cuda as cuda_backend
    from npu_pool.paths import cache_root
    from npu_pool.verdict import Candidate
    from npu_pool.verifier import verify
    from tests.npu_pool.harness_support import harness_config as cuda_config

    nvcc = cuda_backend.find_nvcc()
    if nvcc is None or cuda_kernel.nvcc_version(nvcc) == "unknown":
        pytest.skip("nvcc (the CUDA toolkit) is not installed")
    shown = in_task_terms(example_items("cuda")["elementwise"], rendered("cuda", values_task))
    assert shown is not None
    artifact = cuda_kernel.build_kernel(shown.item.content, values_task.kernel_signature, nvcc, (9, 0), tmp_path,
                                        cache_root() / "test-build" / "cuda-kernels")
    assert artifact.stat().st_size > 0  # the renamed source is still CUDA (threadIdx.x and the launch intact)
    ready, why = backend_ready("cuda", "kernel")
    if not ready:
        pytest.skip(f"built; not run: {why}")
    verdict = verify(values_task, Candidate(source=shown.item.content, format="kernel"), cuda_config(backend="cuda"))
    assert verdict.feasible, f"{verdict.gate}: {verdict.reason}\n{verdict.details}"
