"""The brief's own worked example compiles as the model will copy it (issue 64, point 1: in v5 it
was most of both arms' compile errors on the twin). Each backend's generic example (its task
0_ScaledAdd, then its kernel) runs through that backend's real gates on the task it shows, and
the signature it shows is the one the backend renders for that task."""

from __future__ import annotations

import re

import pytest

from actors.prompt_sections import example_signature
from actors.prompt_templates import template
from npu_pool.backends import get_backend
from npu_pool.tasks.spec import load_task
from npu_pool.verdict import Candidate
from npu_pool.verifier import verify
from tests.npu_pool.harness_support import SMALL_BYTES, harness_config

SCALED_ADD = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y):
        return x * self.alpha + y


batch_size = 64
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [0.5]
'''
EXAMPLES = {"cpu": "example_kernel", "npu-twin": "example_kernel_ascendc"}


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    path = tmp_path_factory.mktemp("generic") / "0_ScaledAdd.py"
    path.write_text(SCALED_ADD)
    return load_task(path, max_bytes=SMALL_BYTES)


def _blocks(backend: str) -> tuple[str, str]:
    """(the signature the example's user turn shows, the kernel its assistant turn answers)."""
    user, answer = template(EXAMPLES[backend]).split("=== assistant ===")
    shown = re.findall(r"```cpp\n(.*?)```", user, re.DOTALL)[-1]
    kernel = re.search(r"```cpp\n(.*?)```", answer, re.DOTALL).group(1)
    return shown, kernel


@pytest.mark.parametrize("backend", ["cpu", "npu-twin"])
def test_the_generic_example_passes_its_backends_gates_on_its_task(backend, task):
    _, kernel = _blocks(backend)
    verdict = verify(task, Candidate(source=kernel, format="kernel"), harness_config(backend=backend))
    assert verdict.feasible, f"{backend}: {verdict.gate}/{verdict.category}: {verdict.reason}\n{verdict.details}"


def test_the_ascend_c_example_shows_the_signature_the_twin_renders(task):
    shown, kernel = _blocks("npu-twin")
    rendered = example_signature(get_backend("npu-twin").render_kernel_signature(task.kernel_signature))
    def words(text: str) -> str:
        return " ".join(text.split()).replace("( ", "(").replace(" )", ")")

    assert words(shown) == words(rendered)
    # the simplest form (issue 64): no queues, no parameter structs, every name declared in the kernel
    for construct in ("TQue", "TPipe", "DataCopyPad", "DataCopyExtParams", "LocalTensor"):
        assert construct not in kernel
