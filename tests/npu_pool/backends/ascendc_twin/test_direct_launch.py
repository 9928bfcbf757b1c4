"""The direct-launch form's source rewriting: `<<<>>>` launches become the twin's launch call,
line for line, and the generated entry passes the task's tensors (inputs, then outputs) and
scalars to the program's operator. (The form's build and run: test_backend_npu_twin.py.)"""

from __future__ import annotations

import pytest

from npu_pool.backends.ascendc_twin.direct import direct_glue, is_direct_program, rewrite_launches
from npu_pool.backends.base import KernelBuildError
from npu_pool.tasks.spec import load_task
from tests.npu_pool.harness_support import SUITE


def test_a_template_launch_becomes_a_twin_launch_of_the_same_call():
    source = "void go(GM_ADDR x, int64_t n, void* s) {\n    relu_kernel<float><<<n / 8, nullptr, s>>>(x, n);\n}\n"
    rewritten = rewrite_launches(source)
    assert "::evk_twin::DirectLaunch(n / 8, [&]() { relu_kernel<float>(x, n); });" in rewritten
    assert "<<<" not in rewritten and rewritten.count("\n") == source.count("\n")


def test_arguments_over_several_lines_and_nested_calls_keep_their_lines():
    source = ("void go() {\n    k<<<blocks(3), 0, stream>>>(a(1, 2),\n        b, f(g(c)));\n    after();\n"
              "    ns::k2<half, 4><<<8, nullptr, st>>>(x);\n}\n")
    rewritten = rewrite_launches(source)
    assert "::evk_twin::DirectLaunch(blocks(3), [&]() { k(a(1, 2),\n        b, f(g(c))); });" in rewritten
    assert "::evk_twin::DirectLaunch(8, [&]() { ns::k2<half, 4>(x); });" in rewritten
    assert rewritten.splitlines()[3] == "    after();"


def test_a_kernel_launch_projects_macro_becomes_a_twin_launch_with_converted_arguments():
    source = ('#include "aclrtlaunch_add_custom.h"\nvoid go(void* x, void* s) {\n'
              "    ACLRT_LAUNCH_KERNEL(add_custom)(8, s, x, f(1, 2));\n}\n")
    rewritten = rewrite_launches(source)
    assert rewritten.splitlines()[0] == "" and rewritten.count("\n") == source.count("\n")
    assert ("::evk_twin::DirectLaunch(8, [&]() { add_custom(::evk_twin::launch_arg(x), "
            "::evk_twin::launch_arg(f(1, 2))); });") in rewritten


def test_a_launch_in_a_comment_or_string_is_left_alone():
    source = '// launches with k<<<8, 0, s>>>(x)\nconst char* say = "k<<<1, 0, s>>>(y)";\nvoid go() { k<<<2, 0, s>>>(z); }\n'
    rewritten = rewrite_launches(source)
    assert rewritten.splitlines()[:2] == source.splitlines()[:2]
    assert "::evk_twin::DirectLaunch(2, [&]() { k(z); });" in rewritten


def test_a_launch_without_a_block_count_or_closing_paren_is_a_build_error():
    with pytest.raises(KernelBuildError, match="no block count"):
        rewrite_launches("void go() { k<<<>>>(x); }")
    with pytest.raises(KernelBuildError, match="not closed"):
        rewrite_launches("void go() { k<<<1, 0, s>>>(x; }")


def test_the_form_is_a_program_with_its_own_module():
    assert is_direct_program("PYBIND11_MODULE(ops, m)\n{\n    m.def(\"relu\", &relu);\n}\n")
    assert not is_direct_program('extern "C" __global__ __aicore__ void kernel(GM_ADDR x) {}\n')


def test_the_entry_passes_inputs_then_outputs_and_the_task_scalars():
    task = load_task(SUITE / "level1" / "9_LeakyReLU.py", max_bytes=1 << 16)
    glue = direct_glue(task.kernel_signature)
    assert 'extern "C" uint32_t aclrtlaunch_kernel(uint32_t blockDim, void* stream, void* x, void* out' in glue
    pushes = [line for line in glue.splitlines() if "call.tensors.push_back" in line]
    assert [p.split("borrowed(")[1].split(",")[0] for p in pushes] == ["x", "out"]
    assert "torch::kFloat32" in pushes[0] and "call.scalars = {static_cast<double>(t." in glue
