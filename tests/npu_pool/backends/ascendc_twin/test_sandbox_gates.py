"""The npu-twin backend's every gate in the sandbox: a correct kernel, its host half, wrong,
overrunning and unsupported kernels, v3's ReLU6 on its own task, the Ascend C anti-hack rules
first, and runaway kernels stopped by the sandbox. The kernels are the ones the session's `built`
fixture (conftest.py) put into the persistent build cache, so the sandboxed worker finds them built."""

from __future__ import annotations

import pytest

from npu_pool.gates.profiler import MODELLED_TIMED_CALLS
from npu_pool.tasks.spec import load_task
from npu_pool.verdict import Candidate
from npu_pool.verifier import evaluate, verify
from tests.npu_pool.backends.ascendc_twin.twin_support import CANDIDATE_KERNELS as KERNELS
from tests.npu_pool.backends.ascendc_twin.twin_support import line_of
from tests.npu_pool.harness_support import SMALL_BYTES, SUITE, harness_config


def candidate(name: str) -> Candidate:
    return Candidate(source=(KERNELS / f"{name}.cpp").read_text(), format="kernel")


def test_gates_in_the_sandbox(relu_task, built):
    config = harness_config(backend="npu-twin", fit_max_bytes=SMALL_BYTES // 16, correctness_trials=3, timed_trials=20)
    verdict, report = evaluate(relu_task, candidate("relu_good"), config, profile=True)
    assert verdict.feasible, verdict
    assert report.trials == MODELLED_TIMED_CALLS < config.timed_trials  # a modelled cost repeats: 3 calls, not 20
    assert verdict.sandbox["network_isolated"] and verdict.timings["compile_cached"] == 1.0
    assert report.timing == "modelled" and report.median_ms > 0 and report.baseline_eager_ms > 0
    assert report.hints[0].startswith("timing modelled by the Ascend C twin")
    assert report.baseline_compile_error == "timings are modelled: torch.compile's code does not run on the Ascend C twin"

    two_halves = verify(relu_task, candidate("relu_host"), config)  # the host half runs in the sandbox too
    assert two_halves.feasible, two_halves

    wrong = verify(relu_task, candidate("relu_wrong"), config)
    assert (wrong.feasible, wrong.gate) == (False, "correctness"), wrong

    overrun = verify(relu_task, candidate("relu_overrun"), config)
    assert (overrun.gate, overrun.category) == ("runtime", "exception"), overrun
    assert "twin fault [gm-bounds]: DataCopyPad(UB->GM) at kernel.cpp:" in overrun.reason

    unsupported = verify(relu_task, candidate("relu_unsupported"), config)
    assert (unsupported.gate, unsupported.category) == ("compile", "compile_error")
    assert unsupported.reason.startswith("AscendC::Tanh is not in the EvoKernel twin")


@pytest.mark.slow  # one more -O2 build, for its own task
def test_v3s_relu6_is_refused_on_its_task_in_the_sandbox():
    task = load_task(SUITE / "level1" / "45_ReLU6.py", max_bytes=SMALL_BYTES // 16)
    config = harness_config(backend="npu-twin", fit_max_bytes=SMALL_BYTES // 16, correctness_trials=1)
    verdict = verify(task, candidate("relu6_v3_every_block"), config)
    assert (verdict.feasible, verdict.gate, verdict.category) == (False, "runtime", "exception"), verdict
    line = line_of(KERNELS / "relu6_v3_every_block.cpp", "out_ptr[off] =")
    assert f"twin fault [block-overlap]: raw store at kernel.cpp:{line}: block 1 writes byte 0 of 'out'" in verdict.reason


def test_the_ascend_c_anti_hack_rules_run_first(relu_task):
    config = harness_config(backend="npu-twin", fit_max_bytes=SMALL_BYTES // 16)
    source = (KERNELS / "relu_good.cpp").read_text().replace(
        "    if (length == 0) {", "    evk_twin_reset();  // clears the twin's regions\n    if (length == 0) {")
    verdict = verify(relu_task, Candidate(source=source, format="kernel"), config)
    assert (verdict.gate, verdict.category) == ("hack", "harness_internals"), verdict
    modelnew = verify(relu_task, Candidate(source="class ModelNew: pass\n", format="modelnew"), config)
    assert (modelnew.gate, modelnew.category) == ("compile", "unsupported_format")


RUNAWAYS = {  # inserted at the top of relu_good's body: what a broken or hostile kernel does
    "hang": "    volatile int keep_going = 1;\n    while (keep_going) {}\n",
    "crash": "    volatile float* nowhere = nullptr;\n    *nowhere = 1.0f;\n",
    # takes and touches 128 MiB blocks until the sandbox's memory cap makes malloc fail (a trap);
    # gives up by itself after 8 GiB, so a missing cap shows as a wrong verdict, not a dead machine
    "memory_bomb": ("    for (int i = 0; i < 64; ++i) {\n        char* p = static_cast<char*>(malloc(size_t(128) << 20));\n"
                    "        if (p == nullptr) __builtin_trap();\n        memset(p, 1, size_t(128) << 20);\n    }\n"),
}


@pytest.mark.slow
@pytest.mark.parametrize("runaway", sorted(RUNAWAYS))
def test_a_runaway_twin_kernel_is_stopped_by_the_sandbox(relu_task, runaway):
    source = "#include <cstdlib>\n#include <cstring>\n" + (KERNELS / "relu_good.cpp").read_text().replace(
        "    if (length == 0) {", RUNAWAYS[runaway] + "    if (length == 0) {", 1)
    config = harness_config(backend="npu-twin", fit_max_bytes=SMALL_BYTES // 16, run_timeout_s=5.0,
                            memory_limit_mb=1024)
    verdict = verify(relu_task, Candidate(source=source, format="kernel"), config)
    # the memory cap makes malloc fail, and the kernel's own trap ends it (SIGILL)
    expected = {"hang": ("timeout", "wall-clock limit"), "crash": ("crash", "SIGSEGV"),
                "memory_bomb": ("crash", "SIGILL")}[runaway]
    assert (verdict.feasible, verdict.gate, verdict.category) == (False, "runtime", expected[0]), verdict
    assert expected[1] in verdict.reason, verdict.reason
