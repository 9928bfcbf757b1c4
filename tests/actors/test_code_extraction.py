"""Code extraction from the shapes LLM replies really take."""

from __future__ import annotations

from actors.code_extraction import extract_code

KERNEL = 'extern "C" void kernel(const float* x, float* out, int64_t x_d0) {\n    for (int64_t i = 0; i < x_d0; ++i) out[i] = x[i] > 0 ? x[i] : 0;\n}'
MODELNEW = "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"


def test_plain_fenced_block():
    found = extract_code(f"Here you go:\n```cpp\n{KERNEL}\n```\nThis is fast.", "kernel")
    assert found.code == KERNEL + "\n" and found.reason is None


def test_picks_the_block_that_defines_the_entry_point():
    reply = (f"First the reference:\n```python\nclass Model(nn.Module): pass\n```\nthen a helper:\n"
             f"```cpp\nstatic float relu(float v) {{ return v; }}\n```\nand the kernel:\n```c++\n{KERNEL}\n```")
    assert extract_code(reply, "kernel").code == KERNEL + "\n"
    reply = f"```cpp\n{KERNEL}\n```\n```python\n{MODELNEW}```"
    assert extract_code(reply, "modelnew").code == MODELNEW


def test_wrong_or_missing_language_tag():
    assert extract_code(f"```python\n{KERNEL}\n```", "kernel").code == KERNEL + "\n"
    assert extract_code(f"```\n{MODELNEW}```", "modelnew").code == MODELNEW
    assert extract_code(f"~~~\n{KERNEL}\n~~~", "kernel").code == KERNEL + "\n"


def test_unterminated_fence_with_a_complete_kernel_is_kept():
    found = extract_code(f"```cpp\n#include <cstdint>\n{KERNEL}\n", "kernel")
    assert found.code is not None and found.unterminated and found.code.rstrip().endswith("}")


def test_cut_inside_the_code_is_a_reason_not_code():
    found = extract_code(f"```cpp\n{KERNEL[:60]}", "kernel")
    assert found.code is None and "cut off" in found.reason
    found = extract_code("```python\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return (x", "modelnew")
    assert found.code is None and "cut off" in found.reason


def test_no_fence_with_prose_around():
    reply = f"Sure! The kernel is below.\n#include <cmath>\n{KERNEL}\nIt uses a simple loop."
    found = extract_code(reply, "kernel")
    assert found.code == f"#include <cmath>\n{KERNEL}\n"
    found = extract_code(f"Here is the code:\n{MODELNEW}\nHope this helps!", "modelnew")
    assert found.code == MODELNEW


def test_thinking_sections_are_ignored():
    reply = f"<think>maybe ```cpp\nvoid kernel(int a) {{}}\n``` no</think>\n```cpp\n{KERNEL}\n```"
    assert extract_code(reply, "kernel").code == KERNEL + "\n"


def test_replies_without_usable_code():
    assert extract_code("", "kernel").reason == "empty reply"
    assert extract_code("I cannot help with that.", "kernel").reason.startswith("no code in the reply")
    found = extract_code("```cpp\nint main() { return 0; }\n```", "kernel")
    assert found.code is None and found.reason == "no code block defines a `kernel` function"
    assert extract_code(f"```cpp\n{KERNEL}\n```", "modelnew").code is None


# The Ascend C entry as the brief renders it, one commented parameter a line (npu_pool/backends/ascendc.py).
ASCENDC_HEAD = '''using namespace AscendC;
extern "C" __global__ __aicore__ void kernel(
    GM_ADDR x,          // input, float32 [x_d0 x x_d1] (now 128x4096)
    GM_ADDR out,        // output, float32 [out_d0 x out_d1] (now 128x4096); written whole
    GM_ADDR workspace,  // 16 MiB scratch (SetSysWorkspace(workspace) before Matmul)
'''
ASCENDC_BODY = "{\n    KernelTiling t;\n    CopyTiling(&t, tiling);\n}\n"


def test_a_comment_between_the_parameter_list_and_the_body_is_still_the_kernel():
    """Code as the brief shows it: the last parameter's comment stands between `)` and `{`; a `;` in a
    comment is no end of a declaration either."""
    code = ASCENDC_HEAD + "    GM_ADDR tiling)     // KernelTiling in global memory\n" + ASCENDC_BODY
    assert extract_code(f"```cpp\n{code}```", "kernel").code == code
    assert extract_code(f"Here it is:\n{code}Done.", "kernel").code == code  # unfenced, prose around
    found = extract_code(f"```cpp\n{code}", "kernel")  # cut after the code: still whole
    assert found.code is not None and found.unterminated


def test_a_parameter_list_left_open_is_said_to_be_so():
    """What a small model made of the brief's signature shown with `);` on a line of its own: the
    commented lines kept, `{` in place of `);` (probe drafts, 2026-12-07)."""
    code = ASCENDC_HEAD + "    GM_ADDR tiling      // KernelTiling in global memory\n" + ASCENDC_BODY
    found = extract_code(f"```cpp\n{code}```", "kernel")
    assert found.code is None and found.reason.startswith("the `kernel` function's parameter list is not closed")
    assert extract_code(code, "kernel").reason == found.reason  # without a fence as well
