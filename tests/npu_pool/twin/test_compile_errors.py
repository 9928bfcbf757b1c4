"""An Ascend C API outside the twin's subset is a compile error naming the API (not a cryptic
template error); the toolkit's include layout (kernel_operator.h, lib/matmul_intf.h) works."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.npu_pool.twin.twin_support import INCLUDE

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


def syntax(folder, calls: list[str]) -> subprocess.CompletedProcess:
    source = folder / "kernel.cpp"
    source.write_text(KERNEL.format(call=";\n    ".join(calls)))
    return subprocess.run(["nice", "g++", "-std=c++17", "-fsyntax-only", f"-I{INCLUDE}", str(source)],
                          capture_output=True, text=True)


UNSUPPORTED = {"Sigmoid(t, t, 64)": "Sigmoid", "Sigmoid<float, false>(t, t, 64)": "Sigmoid",
               "Transpose(t, t)": "Transpose", "SyncAll()": "SyncAll", "SoftMax(t, t, t)": "SoftMax"}


@pytest.fixture(scope="module")
def unsupported_errors(tmp_path_factory):
    """One g++ run over every unsupported call (g++ reports each static_assert)."""
    return syntax(tmp_path_factory.mktemp("unsupported"), list(UNSUPPORTED))


@pytest.mark.parametrize("call", list(UNSUPPORTED))
def test_unsupported_api_names_itself(unsupported_errors, call):
    assert unsupported_errors.returncode != 0
    line = next(i for i, text in enumerate(KERNEL.format(call=";\n    ".join(UNSUPPORTED)).splitlines(), 1) if call in text)
    message = f"AscendC::{UNSUPPORTED[call]} is not in the EvoKernel twin"
    assert message in unsupported_errors.stderr
    # the error points at the kernel's call
    assert f"kernel.cpp:{line}:" in unsupported_errors.stderr


def test_supported_calls_compile(tmp_path):
    done = syntax(tmp_path, ["Exp(t, t, 64)", "Muls(t, t, 0.5f, 64)", "Cast(t.ReinterpretCast<half>(), t, RoundMode::CAST_RINT, 64)",
                             "LocalTensor<half> h = t.ReinterpretCast<half>()", "Muls(h, h, 0.5f, 64)",
                             "Duplicate(h, 1.0f, 64)", "Maxs(h, h, half(0.0f), 64)"])
    assert done.returncode == 0, done.stderr
