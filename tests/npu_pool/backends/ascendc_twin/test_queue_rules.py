"""Each queue rule of the twin, with the case the device accepts and the case it refuses
(kernels/queue_rules.cpp: case 2k is accepted, case 2k + 1 breaks the rule)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.npu_pool.backends.ascendc_twin.twin_support import make_tiling

RULES = {  # case refused -> (rule, words of the message)
    1: ("use-after-free", "FreeTensor of a tensor already freed"),
    3: ("queue-order", "still in the queue"),
    5: ("queue-depth", "all 1 buffers of this queue are allocated"),
    7: ("queue-depth", "queue of depth 1 already holds 1"),
    9: ("queue-order", "DeQue from an empty queue"),
    11: ("queue-order", "used while it sits in a queue"),
    13: ("queue-order", "not allocated from this queue"),
    15: ("use-after-free", "used after FreeTensor"),
    17: ("queue-order", "EnQue of a tensor already in the queue"),
}


def run_case(fidelity, case: int):
    tensors = [("a", np.ones(1024, np.float32), 0), ("b", np.zeros(8, np.float32), 0), ("c", np.zeros(8, np.float32), 1)]
    return fidelity.run("queue_rules", 1, tensors, make_tiling((case,)))


@pytest.mark.parametrize("refused", sorted(RULES))
def test_each_queue_rule_accepts_the_device_case_and_refuses_the_broken_one(fidelity, refused):
    accepted = run_case(fidelity, refused - 1)
    assert accepted.rc == 0 and accepted.fault == "", accepted.fault
    run = run_case(fidelity, refused)
    rule, words = RULES[refused]
    assert run.rc == 1 and run.fault_parts()["rule"] == rule, run.fault
    assert words in run.fault, run.fault
