"""Operator families read from a reference's torch calls, and the worked examples they ask for."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.families import FAMILIES, example_name, operator_families

SUITE = Path(__file__).resolve().parents[2] / "suites" / "cpu"


@pytest.mark.parametrize(("task", "families"), [
    ("level1/4_ReLU", ["elementwise"]),
    ("level1/3_ScaleShift", ["elementwise"]),
    ("level1/15_MeanOverDim", ["row_reduction"]),
    ("level1/19_LogSoftmax", ["softmax_norm"]),
    ("level1/21_RMSNorm", ["softmax_norm", "row_reduction"]),
    ("level1/25_RectMatmul", ["matmul"]),
    ("level1/33_AvgPool2d", ["window"]),
    ("level1/34_Conv1d", ["conv"]),
    ("level1/38_Cumprod", ["scan"]),
    ("level2/4_MatmulSoftmax", ["matmul", "softmax_norm"]),
    ("level2/3_Conv2dBatchNormReLU", ["conv", "softmax_norm"]),
    ("level2/6_Conv2dMaxPoolSigmoid", ["conv", "window"]),
])
def test_families_of_the_bundled_suite(task, families):
    assert operator_families((SUITE / f"{task}.py").read_text()) == families


def test_the_matmul_operator_counts_and_names_follow_the_bundles():
    source = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, a, b):\n        return (a @ b).relu()\n"
    assert operator_families(source) == ["matmul"]
    assert example_name(operator_families(source)[0]) == "example_matmul"
    assert operator_families("def broken(:\n") == []


def test_every_family_has_a_worked_example_in_every_bundle():
    bundles = Path(__file__).resolve().parents[2] / "memory_actor" / "bundles"
    for bundle in ("cpu", "cuda", "npu"):
        text = (bundles / f"{bundle}.yaml").read_text()
        for family in FAMILIES:
            assert f"name: {example_name(family)}\n" in text, (bundle, family)
        assert "name: template_" not in text, bundle  # the fragments they replace are gone
