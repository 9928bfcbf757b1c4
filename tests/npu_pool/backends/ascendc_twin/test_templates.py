"""Every template kernel of memory_actor/bundles/npu.yaml compiles against the twin in
EvoKernel's Ascend C kernel format (ascendc.kernel_translation_unit) and computes its task of
suites/cpu correctly, on several blocks."""

from __future__ import annotations

import numpy as np
import pytest

from tests.npu_pool.backends.ascendc_twin.twin_support import run_template
from tests.npu_pool.suite_support import ATOL, RTOL

FAMILIES = ["example_elementwise", "example_row_reduction", "example_softmax_norm", "example_matmul",
            "example_window", "example_scan", "example_conv"]  # the family examples (issue 41)


def present(cases):
    """The bundle's family kernels (skipped, not passed, for a bundle that has none)."""
    if not cases:
        pytest.skip("the npu bundle has no family kernels with a task to run")
    return cases


def test_the_bundle_has_the_six_family_templates(templates):
    _, cases = templates
    assert sorted(c.name for c in present(cases)) == sorted(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_template_passes_its_task_on_the_twin(templates, family):
    library, cases = templates
    case = next(c for c in present(cases) if c.name == family)
    run = run_template(library, case, block_dim=8)
    assert run.rc == 0, f"{case.task}: {run.fault}"
    outputs = [array for array in run.outputs.values()]
    for got, expected in zip(outputs, case.outputs, strict=True):
        np.testing.assert_allclose(got, expected.numpy(), rtol=RTOL, atol=ATOL, err_msg=f"{family} on {case.task}")
    assert run.profile["modelled"] is True and run.profile["modelled_us"] > 0
