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


def syntax(tmp_path, call: str) -> subprocess.CompletedProcess:
    source = tmp_path / "kernel.cpp"
    source.write_text(KERNEL.format(call=call))
    return subprocess.run(["nice", "g++", "-std=c++17", "-fsyntax-only", f"-I{INCLUDE}", str(source)],
                          capture_output=True, text=True)


@pytest.mark.parametrize("call,api", [("Sigmoid(t, t, 64)", "Sigmoid"), ("Sigmoid<float, false>(t, t, 64)", "Sigmoid"),
                                      ("Transpose(t, t)", "Transpose"), ("SyncAll()", "SyncAll")])
def test_unsupported_api_names_itself(tmp_path, call, api):
    done = syntax(tmp_path, call)
    assert done.returncode != 0
    assert f"AscendC::{api} is not in the EvoKernel twin" in done.stderr


def test_supported_call_compiles(tmp_path):
    done = syntax(tmp_path, "Exp(t, t, 64); Muls(t, t, 0.5f, 64)")
    assert done.returncode == 0, done.stderr
