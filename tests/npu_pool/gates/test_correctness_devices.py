"""The correctness gate keeps every comparison on one device (issue 15, point 2).

On a GPU the gate once compared the previous trial's outputs, copied to the host, with the
current trial's on the device: every candidate that passed trial 1 failed trial 2. On a CPU-only
machine the host and the device are the same, so the mistake cannot show by itself. Here
every copy to the host (`Tensor.cpu()`) lands on the meta device instead: "the device" is the
CPU and "the host" is meta, and a comparison of a host copy with a device tensor fails as it
does on a GPU. The real gate runs under it, with real candidates.
"""

from __future__ import annotations

import pytest
import torch
from torch.overrides import TorchFunctionMode

from npu_pool.gates import correctness
from npu_pool.tasks.sizing import exec_task

TINY = '''
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x * 1e-6
def get_inputs():
    return [torch.randn(64, 32)]
def get_init_inputs():
    return []
'''


class HostCopiesElsewhere(TorchFunctionMode):
    """`Tensor.cpu()` returns a meta tensor: host copies live on another device than the CPU."""

    def __init__(self) -> None:
        super().__init__()
        self.host_copies = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.cpu:
            self.host_copies += 1
            return args[0].to("meta")
        return func(*args, **(kwargs or {}))


class Honest(torch.nn.Module):
    def forward(self, x):
        return x * 1e-6


class Zeros(torch.nn.Module):
    """Within tolerance of the tiny reference on every trial, yet constant."""

    def forward(self, x):
        return torch.zeros_like(x)


def _check(candidate_class: type[torch.nn.Module]) -> correctness.WorkerOutcome:
    task = exec_task(TINY, "tiny.py")
    return correctness.check(task, lambda reference, seed: candidate_class(), "cpu", trials=3, seed=0,
                             atol=None, rtol=None, perturbed_trial=True)


def test_the_simulation_makes_a_host_device_comparison_fail():
    with HostCopiesElsewhere():
        device_tensor = torch.ones(4)
        host_copy = device_tensor.cpu()
    assert host_copy.device.type == "meta"
    with pytest.raises(correctness.HarnessDeviceError, match="meta"):
        correctness.same_values(host_copy, device_tensor)
    with pytest.raises((RuntimeError, NotImplementedError)):
        torch.equal(host_copy, device_tensor)  # what torch does by itself (on a GPU: "same device")


def test_an_honest_candidate_passes_every_trial_with_host_copies_elsewhere():
    mode = HostCopiesElsewhere()
    with mode:
        outcome = _check(Honest)
    assert outcome.feasible, outcome.reason
    assert outcome.reason == "4 trials matched"
    assert mode.host_copies == 0  # a passing candidate's trials never copy to the host


def test_constant_outputs_are_still_caught_on_the_device():
    with HostCopiesElsewhere():
        outcome = _check(Zeros)
    assert not outcome.feasible
    assert (outcome.gate, outcome.category) == ("correctness", "constant_output")
    assert "trial 2 of 3" in outcome.reason


def test_an_output_on_another_device_is_the_candidates_fault_not_a_harness_error():
    class OnMeta(torch.nn.Module):
        def forward(self, x):
            return (x * 1e-6).to("meta")

    outcome = _check(OnMeta)
    assert (outcome.gate, outcome.category) == ("correctness", "output_device")
    assert "expected cpu" in outcome.reason
