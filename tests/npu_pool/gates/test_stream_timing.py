"""Timing that cannot miss work (issue 15, point 4).

Device events on the current stream cannot see work launched on another stream. The event
timer synchronises the whole device around the timed region and measures how long the device
stays busy after the region's end event has completed (`lingering_ms`); the worker's stream
audit (`timed_check.untimed_work`) makes a candidate whose calls leave work running infeasible
(gate `hack`, category `untimed_work`). The decision is tested here on numbers; the timer and
the audit need a GPU (`-m gpu`, skipped without one).
"""

from __future__ import annotations

import pytest
import torch

from npu_pool.backends import get_backend
from npu_pool.gates.timed_check import LINGER_MIN_MS, lingering_problem
from npu_pool.verdict import Candidate

from ..harness_support import fixture_task, harness_config

gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_calls_that_leave_the_device_idle_pass():
    honest = [(0.40, 0.008), (0.41, 0.010), (0.39, 0.007), (0.40, 0.300), (0.40, 0.009)]  # one host hiccup
    reference = [(0.80, 0.009)] * 5
    assert lingering_problem(honest, reference) is None


def test_calls_that_leave_work_on_another_stream_are_named():
    side_stream = [(0.01, 0.95), (0.01, 0.97), (0.01, 0.93), (0.02, 0.96), (0.01, 0.94)]
    reference = [(0.80, 0.009)] * 5
    problem = lingering_problem(side_stream, reference)
    assert problem is not None
    assert "0.95 ms" in problem and "another stream" in problem and "median of 5 calls" in problem


def test_the_allowance_follows_the_references_own_lingering():
    """A slow host (the reference's calls also linger) raises the bar: 3x the reference's median."""
    candidate = [(0.4, 0.2)] * 5
    assert lingering_problem(candidate, [(0.8, 0.01)] * 5) is not None
    assert lingering_problem(candidate, [(0.8, 0.09)] * 5) is None
    assert lingering_problem([(0.4, LINGER_MIN_MS * 0.9)] * 5, []) is None


def test_the_cpu_clock_waits_for_all_work():
    timer = get_backend("cpu").timer()
    timer.start()
    torch.ones(1000).sum()
    timer.stop()
    assert timer.elapsed_ms() >= 0 and timer.lingering_ms() == 0.0


# --- on a GPU (not run in the session that wrote them: no GPU there) ---------------------------


@gpu
@pytest.mark.gpu
def test_event_timer_sees_work_left_on_a_side_stream():
    backend = get_backend("cuda")
    backend.synchronize()
    side = torch.cuda.Stream()
    timer = backend.timer()
    timer.start()
    with torch.cuda.stream(side):
        torch.cuda._sleep(20_000_000)  # milliseconds of spinning, on the side stream only
    timer.stop()
    assert timer.elapsed_ms() < 1.0 < timer.lingering_ms()
    timer = backend.timer()
    timer.start()
    torch.cuda._sleep(20_000_000)  # the same work on the current stream: timed, nothing lingers
    timer.stop()
    assert timer.elapsed_ms() > 1.0 and timer.lingering_ms() < LINGER_MIN_MS * 4


SIDE_STREAM_MODELNEW = '''
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = torch.cuda.Stream()

    def forward(self, x):
        out = torch.relu(x)               # correct, on the current stream
        with torch.cuda.stream(self.side):
            torch.cuda._sleep(5_000_000)  # and work the timer's events cannot see
        return out
'''

HONEST_MODELNEW = '''
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        torch.cuda._sleep(1_000_000)
        return torch.relu(x)
'''


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("source, expected", [(SIDE_STREAM_MODELNEW, ("hack", "untimed_work")),
                                              (HONEST_MODELNEW, ("ok", "ok"))])
def test_the_stream_audit_judges_a_real_candidate(source, expected):
    """Through the sandbox without the static checker (which rejects torch.cuda.Stream itself)."""
    from npu_pool.backends.cuda import torch_cuda_home
    from npu_pool.verifier import sandboxed_gates

    if torch_cuda_home() is None:
        pytest.skip("the ModelNew route on cuda needs the CUDA toolkit (load_inline)")

    task = fixture_task("huge_relu")
    verdict, report = sandboxed_gates(task, Candidate(source=source, format="modelnew"),
                                      harness_config(backend="cuda"), get_backend("cuda"), profile=True)
    assert (verdict.gate, verdict.category) == expected, verdict.reason
    assert (report is None) == (expected[0] != "ok")
