"""No secret leaves through a kernel: a candidate that reads a planted secret and tries to hand
it back through its verdict gets nothing to hand back.

The secrets sit in the user's real home (found through getpwuid, whatever HOME says), in the
project's checkout and in a memory bank; their text looks like no credential and is set in
no environment variable, so only the read confinement (Landlock read rights,
npu_pool.sandbox.read_allow) keeps them out of the verdict. Each candidate also hands back what it
did read ("unreadable:<errno>" or the text), so the channel itself is shown to work: with the
read rules switched off (checked by hand, 2026-11-25: `readable=None` in warm_worker._runner),
the exception, stderr and crash tests fail with the secret's text in the verdict. The
compile-error channel has two locks: with reads unconfined the compiler quotes the secret
file, and `own_diagnostics` leaves those lines out (with both off the include tests fail;
tests/npu_pool/test_redaction.py shows the filter alone).
"""

from __future__ import annotations

import os
import pwd
import secrets
import subprocess
from pathlib import Path

import pytest

from npu_pool.backends import get_backend
from npu_pool.sandbox.confinement import landlock_abi
from npu_pool.verdict import Candidate
from npu_pool.verifier import sandboxed_gates

from ..harness_support import ROOT, fixture_task, harness_config

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="no Landlock on this kernel")

KERNEL_HEAD = """#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
static std::string slurp(const char* path) {
    FILE* f = fopen(path, "r");
    if (!f) return std::string("unreadable:") + std::to_string(errno);
    char buf[256] = {0};
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    return std::string("read:") + std::string(buf, n);
}
extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    std::string got;
    for (const char* p : {PATHS_HERE}) got += std::string(p) + "=" + slurp(p) + ";";
"""
KERNEL_TAIL = """    for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
"""
KERNEL_LEAKS = {
    "exception": '    throw std::runtime_error("LEAK " + got);\n',  # uncaught: terminate prints what()
    "stderr_and_crash": '    fprintf(stderr, "LEAK %s\\n", got.c_str()); fflush(stderr); raise(SIGSEGV);\n',
}
MODELNEW = '''import os
import sys

import torch
import torch.nn as nn


def slurp(path):
    try:
        with open(path) as handle:
            return "read:" + handle.read(256)
    except OSError as exc:
        return f"unreadable:{{exc.errno}}"


def environs():
    """Every process's environment this process can read (an attacker can guess a pid where
    /proc cannot be listed: here it is given)."""
    found = []
    try:
        pids = os.listdir("/proc")
    except OSError as exc:
        found.append(f"/proc unlistable:{{exc.errno}}")
        pids = [str({holder})]
    for pid in pids:
        if pid.isdigit():
            try:
                found.append(open(f"/proc/{{pid}}/environ", "rb").read().decode(errors="replace"))
            except OSError:
                pass
    return " ".join(found)


class ModelNew(nn.Module):
    def forward(self, x):
        got = ";".join(f"{{p}}={{slurp(p)}}" for p in {paths!r}) + " env:" + environs()
        {leak}
        return torch.relu(x)
'''
MODELNEW_LEAKS = {
    "exception": 'raise RuntimeError("LEAK " + got)',
    "stderr_and_crash": 'sys.stderr.write("LEAK " + got + "\\n"); sys.stderr.flush(); os.abort()',
}
MODELNEW_INCLUDE = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load

with open("leak.cpp", "w") as handle:
    handle.write('#include "{path}"\\nint leak() {{ return 0; }}\\n')
_ext = load(name="evk_leak_{tag}", sources=["leak.cpp"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
'''


@pytest.fixture(scope="module")
def relu_task():
    return fixture_task("huge_relu")


@pytest.fixture
def planted(tmp_path):
    """Secret files in the real home, in the checkout and in a memory bank: {place: (path, text)}."""
    bank = tmp_path / ".evokernel" / "memory" / "items.lance"
    bank.mkdir(parents=True)
    places = {"home": Path(pwd.getpwuid(os.getuid()).pw_dir), "checkout": ROOT, "bank": bank}
    found = {}
    for place, folder in places.items():
        text = f"evkplanted_{place}_{secrets.token_hex(12)}"  # a C++ identifier: the compiler would echo it
        path = folder / f".evk-planted-{secrets.token_hex(4)}"
        path.write_text(text + "\n")
        found[place] = (path, text)
    yield found
    for path, _ in found.values():
        path.unlink(missing_ok=True)


def _run(task, source: str, fmt: str):
    config = harness_config(run_timeout_s=30.0, call_time_limit_min_s=5.0)
    return sandboxed_gates(task, Candidate(source=source, format=fmt), config, get_backend("cpu"), False)[0]


def _assert_nothing_leaked(verdict, planted, expect_marker: bool = True):
    text = verdict.model_dump_json()
    for place, (path, secret) in planted.items():
        assert secret not in text, f"the secret planted in the {place} reached the verdict"
        if expect_marker:  # the channel works: the candidate's own words came back
            assert f"{path}=unreadable:13" in text, (place, verdict.details[:1500])


@pytest.mark.parametrize("channel", sorted(KERNEL_LEAKS))
def test_a_kernel_cannot_read_a_secret_into_its_verdict(relu_task, planted, channel):
    paths = ", ".join(f'"{path}"' for path, _ in planted.values())
    source = KERNEL_HEAD.replace("PATHS_HERE", paths) + KERNEL_LEAKS[channel] + KERNEL_TAIL
    verdict = _run(relu_task, source, "kernel")
    assert not verdict.feasible and verdict.gate == "runtime", verdict.model_dump_json(indent=1)
    _assert_nothing_leaked(verdict, planted)


@pytest.mark.parametrize("channel", sorted(MODELNEW_LEAKS))
def test_a_modelnew_cannot_read_a_secret_or_another_process_environment(relu_task, planted, channel):
    marker = f"evkenviron{secrets.token_hex(10)}"  # in no name the redaction knows: only Landlock stops it
    holder = subprocess.Popen(["sleep", "60"], env={"PATH": os.environ["PATH"], "EVK_PLANTED": marker})
    try:
        paths = [str(path) for path, _ in planted.values()]
        source = MODELNEW.format(paths=paths, leak=MODELNEW_LEAKS[channel], holder=holder.pid)
        verdict = _run(relu_task, source, "modelnew")
    finally:
        holder.kill()
        holder.wait()
    assert not verdict.feasible and verdict.gate == "runtime", verdict.model_dump_json(indent=1)
    _assert_nothing_leaked(verdict, planted)
    assert marker not in verdict.model_dump_json()


@pytest.mark.parametrize("place", ["home", "checkout", "bank"])
def test_a_kernel_cannot_include_a_secret_into_its_compile_error(relu_task, planted, place):
    path, secret = planted[place]
    source = f'#include "{path}"\n' + KERNEL_HEAD.replace("PATHS_HERE", '"/dev/null"') + KERNEL_TAIL
    verdict = _run(relu_task, source, "kernel")
    assert not verdict.feasible and verdict.gate == "compile", verdict.model_dump_json(indent=1)
    assert secret not in verdict.model_dump_json()
    assert "Permission denied" in verdict.details, verdict.details  # the compiler was refused the file


@pytest.mark.parametrize("place", ["home", "checkout", "bank"])
def test_a_modelnew_cannot_include_a_secret_into_its_compile_error(relu_task, planted, place):
    path, secret = planted[place]
    source = MODELNEW_INCLUDE.format(path=path, tag=secrets.token_hex(4))
    verdict = _run(relu_task, source, "modelnew")
    assert not verdict.feasible, verdict.model_dump_json(indent=1)
    assert secret not in verdict.model_dump_json()
    assert "Permission denied" in verdict.details, verdict.details
