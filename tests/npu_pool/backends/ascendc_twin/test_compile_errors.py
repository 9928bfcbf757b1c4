"""An Ascend C API outside the twin's subset is a compile error naming the API (not a cryptic
template error); the toolkit's include layout (kernel_operator.h, lib/matmul_intf.h) works."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from typing import NamedTuple

import pytest

from tests.npu_pool.backends.ascendc_twin.twin_support import (
    BUILD_CACHE,
    INCLUDE,
    compiler_version,
    headers_digest,
)

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

KERNEL = """#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR workspace, GM_ADDR tiling)
{{
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    LocalTensor<float> t = b.Get<float>();
    {call};
}}
"""


def syntax(calls: list[str]) -> SyntaxCheck:
    """g++ -fsyntax-only on a kernel making `calls` (see syntax_of)."""
    return syntax_of(KERNEL.format(call=";\n    ".join(calls)))


def syntax_of(text: str) -> SyntaxCheck:
    """g++ -fsyntax-only on a kernel.cpp of `text`, cached (like the test libraries) by the
    source, the twin's headers and the compiler: a run with unchanged headers compiles nothing."""
    key = hashlib.sha256("\0".join([text, headers_digest(), compiler_version()]).encode()).hexdigest()[:20]
    folder = BUILD_CACHE / f"syntax-{key}"
    result = folder / "result.json"
    if result.exists():
        return SyntaxCheck(**json.loads(result.read_text()))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.cpp").write_text(text)
    done = subprocess.run(["nice", "g++", "-std=c++17", "-fsyntax-only", f"-I{INCLUDE}", "kernel.cpp"],
                          capture_output=True, text=True, cwd=folder, env={**os.environ, "LC_ALL": "C"})
    check = SyntaxCheck(done.returncode, done.stderr)
    tmp = folder / f".result-{os.getpid()}.json"
    tmp.write_text(json.dumps({"returncode": check.returncode, "stderr": check.stderr}))
    os.replace(tmp, result)
    return check


class SyntaxCheck(NamedTuple):
    returncode: int
    stderr: str


UNSUPPORTED = {"Tanh(t, t, 64)": "Tanh", "Tanh<float, false>(t, t, 64)": "Tanh",
               "Transpose(t, t)": "Transpose", "CumSum(t, t)": "CumSum", "RmsNorm(t, t, t)": "RmsNorm"}


@pytest.fixture(scope="module")
def unsupported_errors():
    """One g++ run over every unsupported call (g++ reports each static_assert)."""
    return syntax(list(UNSUPPORTED))


@pytest.mark.parametrize("call", list(UNSUPPORTED))
def test_unsupported_api_names_itself(unsupported_errors, call):
    assert unsupported_errors.returncode != 0
    line = next(i for i, text in enumerate(KERNEL.format(call=";\n    ".join(UNSUPPORTED)).splitlines(), 1) if call in text)
    message = f"AscendC::{UNSUPPORTED[call]} is not in the EvoKernel twin"
    assert message in unsupported_errors.stderr
    # the error points at the kernel's call
    assert f"kernel.cpp:{line}:" in unsupported_errors.stderr


def test_supported_calls_compile():
    done = syntax(["Exp(t, t, 64)", "Muls(t, t, 0.5f, 64)", "Cast(t.ReinterpretCast<half>(), t, RoundMode::CAST_RINT, 64)",
                   "LocalTensor<half> h = t.ReinterpretCast<half>()", "Muls(h, h, 0.5f, 64)",
                   "Duplicate(h, 1.0f, 64)", "Maxs(h, h, half(0.0f), 64)",
                   # the mask/repeat forms on 16-bit data (128 elements a repeat)
                   "LocalTensor<uint8_t> bits = t.ReinterpretCast<uint8_t>()",
                   "Compare(bits, h, h, CMPMODE::LT, 128, 1, {1, 1, 1, 8, 8, 8})",
                   "CompareScalar(bits, h, half(1.0f), CMPMODE::GE, 128, 1, {1, 1, 8, 8})",
                   "Select(h, bits, h, h, SELMODE::VSEL_TENSOR_TENSOR_MODE, 128, 1, {1, 1, 1, 8, 8, 8})",
                   "Select(h, bits, h, half(0.0f), SELMODE::VSEL_TENSOR_SCALAR_MODE, 128, 1, {1, 1, 1, 8, 8, 8})",
                   "uint64_t all[2] = {~0ull, ~0ull}", "Duplicate(h, half(2.0f), all, 1, 1, 8)",
                   "uint64_t low[2] = {~0ull, 0}", "Cast(t, h, RoundMode::CAST_NONE, low, 1, {1, 1, 8, 4})"])
    assert done.returncode == 0, done.stderr


def test_the_kernel_qualifiers_of_the_samples_compile():
    text = KERNEL.format(call="(void)t").replace('extern "C" __global__ __aicore__ void kernel',
                                                '__global__ __mix__(1, 2) void other(GM_ADDR) {}\n'
                                                '__global__ __vector__ void more(GM_ADDR) {}\n'
                                                'extern "C" __global__ __aicore__ void kernel')
    done = syntax_of(text)
    assert done.returncode == 0, done.stderr


def test_the_names_of_the_published_samples_compile():
    """Names the samples use that the twin once lacked (issue 43): each is declared with its
    documented signature (their behaviour is checked by test_samples.py and test_faults.py)."""
    done = syntax(["ASSERT(GetBlockNum() != 0 && \"block dim can not be zero!\")",
                   "ascendc_assert(GetBlockNum() > 0)", "ascendc_assert(GetBlockNum() > 0, \"blocks %d\", 1)",
                   "ASCENDC_ASSERT(GetBlockNum() > 0, { KERNEL_LOG(KERNEL_ERROR, \"no blocks %d\", 0); })",
                   "KERNEL_LOG(KERNEL_INFO, \"hello\")", "PRINTF(\"x %d\", 1)", "AscendC::PRINTF(\"y\")",
                   "AscendC::printf(\"%s\\n\", \"z\")", "printf(\"%d\", 3)", "AscendC::DumpTensor(t, 1, 32)", "AscendC::InitSocState()",
                   "uint32_t q = AscendC::DivCeil(10u, 4u)", "AscendC::tiling::TCubeTiling cube",
                   "AscendC::LocalMemAllocator<AscendC::Hardware::UB> allocator",
                   "LocalTensor<float> u = allocator.Alloc<float, 64>()",
                   "LocalTensor<float> v = allocator.Alloc<TPosition::VECIN, float>(64)",
                   "SetMaskCount()", "SetVectorMask<float, MaskMode::COUNTER>(0, 100)",
                   "Add<float, false>(t, t, t, MASK_PLACEHOLDER, 1, {1, 1, 1, 8, 8, 8})", "SetMaskNorm()",
                   "SetVectorMask<float>(0, ~0ull)", "ResetMask()", "uint64_t kept = 0",
                   "GatherMask(t, u, static_cast<uint8_t>(1), false, 0, {1, 1, 8, 0}, kept)",
                   "Sum(t, u, SumParams{1, 64, 60})", "uint32_t shape[] = {1, 64}",
                   "ReduceMax<float, Pattern::Reduce::AR>(t, u, shape, true)",
                   "GlobalTensor<int32_t> g", "InitGlobalMemory(g, 0, 0)", "SyncAll()",
                   "Sigmoid(t, u, 64)", "SoftMaxTiling sm", "SoftMaxShapeInfo si{1, 64, 1, 64}",
                   "SoftMax<float>(t, u, sm, si)", "AdjustSoftMaxRes<float, float>(t, u, 0xFF7FFFFF, 0.0f, si)",
                   "LayerNormTiling ln", "LayerNorm<float, false>(t, t, t, u, u, u, 1e-5f, ln)",
                   "int64_t here = block_idx * 8 + block_num",
                   "uint32_t shapes = ONE_BLK_SIZE + ONE_REPEAT_BYTE_SIZE + DEFAULT_BLK_NUM + MAX_REPEAT_TIMES",
                   "SetMaskCount()", "SetVectorMask<uint8_t, MaskMode::COUNTER>(0, 100)",
                   "Add<float, false>(t, t, u, MASK_PLACEHOLDER, 1, {1, 1, 1, DEFAULT_REPEAT_STRIDE, 8, 8})"])
    assert done.returncode == 0, done.stderr


# --- the one-line summary: the first error, in the kernel's words, at the call's line ----------

TEMPLATED = """#include "kernel_operator.h"
using namespace AscendC;
template <class T>
class Op {{
public:
    void Run(LocalTensor<T> t) {{ {call}; }}
}};
extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR workspace, GM_ADDR tiling)
{{
    TPipe pipe;
    TBuf<TPosition::VECCALC> b;
    pipe.InitBuffer(b, 1024);
    Op<float> op;
    op.Run(b.Get<float>());{later}
}}
"""


def summary_of(text: str) -> str | None:
    from npu_pool.backends.ascendc_twin.build import summarize_build_errors

    return summarize_build_errors(syntax_of(text).stderr)


@pytest.mark.parametrize(("call", "later", "expected"), [
    # an undeclared call inside a template is the first error, at its own line (not a later one)
    ("Frobnicate(t, 64)", "\n    int unused = undeclared_later;", "'Frobnicate' is not declared"),
    ("Frobnicate()", "", "'Frobnicate' is not declared"),
    # an API outside the twin called inside a template: the call's line, not the template's use
    ("Tanh(t, t, 64)", "", "AscendC::Tanh is not in the EvoKernel twin"),
    ("AscendC::NoSuchApi(t)", "", "AscendC::NoSuchApi is not in the Ascend C twin"),
    ("AscendC::nosuchns::Thing x", "", "AscendC::nosuchns is not in the Ascend C twin"),
    ("AscendC::TQue<TPosition::VECIN, 1>::NoSuchType y", "", "is not in the Ascend C twin"),
])
def test_the_summary_names_the_first_error_at_the_calls_line(call, later, expected):
    text = TEMPLATED.format(call=call, later=later)
    summary = summary_of(text)
    assert summary is not None and expected in summary, summary
    assert summary.endswith("(kernel.cpp:6); see docs/ascendc_twin.md for the subset") or "(kernel.cpp:6)" in summary, summary
