"""The bundled CPU suite (suites/cpu): every task follows the KernelBench format and runs fast,
without the harness."""

from __future__ import annotations

import inspect
import re

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

from ..suite_support import SUITE, TASK_FILES, _id, build_reference, load_module

# A reference's work, counted instead of timed (docs/suite.md): the largest task today does
# 0.27 GFLOP of matmul/convolution and touches 15 M tensor elements; a task sized 100x too large
# fails either budget, whatever the machine's load.
MAX_FLOPS = 1_000_000_000
MAX_ELEMENTS = 32_000_000

# ----------------------------------------------------------------------------- the suite


def test_suite_has_both_levels_and_enough_tasks():
    level1 = [p for p in TASK_FILES if p.parent.name == "level1"]
    level2 = [p for p in TASK_FILES if p.parent.name == "level2"]
    assert len(level1) + len(level2) >= 40
    assert len(level2) >= 10
    # docs/suite.md states the counts; the learning benchmark's screening pool draws on them
    guide = (SUITE.parents[1] / "docs" / "suite.md").read_text()
    assert f"{len(level1) + len(level2)} operators in KernelBench's task format" in guide
    assert f"`suites/cpu/level1/` ({len(level1)})" in guide and f"`suites/cpu/level2/` ({len(level2)})" in guide


def test_task_file_names_are_unique_numbered_ids():
    for level in {p.parent for p in TASK_FILES}:
        ids = [int(p.stem.split("_", 1)[0]) for p in level.glob("*.py")]
        assert sorted(ids) == list(range(1, len(ids) + 1)), f"{level.name}: ids {sorted(ids)}"
    for path in TASK_FILES:
        assert re.fullmatch(r"\d+_[A-Za-z0-9]+", path.stem), path.name


def test_suite_readme_lists_every_task():
    readme = (SUITE / "README.md").read_text()
    missing = [p.stem for p in TASK_FILES if f"| {p.stem} |" not in readme]
    assert not missing, f"suites/cpu/README.md lacks {missing}"


@pytest.mark.parametrize("path", TASK_FILES, ids=_id)
def test_task_follows_the_format_and_runs_fast(path):
    task = load_module(path)
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        assert hasattr(task, attr), f"{path.name} lacks {attr}"
    assert issubclass(task.Model, torch.nn.Module)
    source = path.read_text()
    assert "cuda" not in source and "dtype=" not in source, "tasks never choose device or dtype"

    model, init_args, inputs, outputs = build_reference(task)
    assert isinstance(init_args, list)
    assert all(isinstance(a, int | float) for a in init_args), "init args are plain numbers"
    assert inputs and all(isinstance(i, torch.Tensor) for i in inputs)
    for tensor in inputs:
        assert tensor.device.type == "cpu" and tensor.dtype == torch.float32
    n_forward = len(inspect.signature(model.forward).parameters)
    assert n_forward == len(inputs), "get_inputs() matches forward's arguments"
    assert all(isinstance(o, torch.Tensor) for o in outputs)

    flops, elements = reference_work(model, inputs)
    assert flops <= MAX_FLOPS, f"reference does {flops / 1e9:.2f} GFLOP of matmul/convolution"
    assert elements <= MAX_ELEMENTS, f"reference's operations read and write {elements / 1e6:.1f} M elements"


class _ElementsTouched(TorchDispatchMode):
    """Counts the tensor elements every aten operation reads and writes: the work of elementwise
    ops, reductions and pooling, which the FLOP counter leaves out."""

    def __init__(self) -> None:
        super().__init__()
        self.elements = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.elements += sum(t.numel() for t in tree_leaves((args, kwargs, out)) if isinstance(t, torch.Tensor))
        return out


def reference_work(model: torch.nn.Module, inputs: list) -> tuple[int, int]:
    """(matmul/convolution/attention FLOPs, tensor elements read and written) of one forward."""
    with torch.no_grad(), FlopCounterMode(display=False) as flops, _ElementsTouched() as touched:
        model(*inputs)
    return flops.get_total_flops(), touched.elements


def test_the_work_budget_catches_a_task_sized_100x_too_large():
    # On the meta device: shapes only, so the 100x cases cost nothing to count.
    elementwise = torch.nn.ReLU()
    assert reference_work(elementwise, [torch.empty(1024, 2048, device="meta")])[1] <= MAX_ELEMENTS
    assert reference_work(elementwise, [torch.empty(100 * 1024, 2048, device="meta")])[1] > MAX_ELEMENTS
    matmul = torch.nn.Linear(1024, 1024, bias=False, device="meta")
    assert reference_work(matmul, [torch.empty(128, 1024, device="meta")])[0] <= MAX_FLOPS
    assert reference_work(matmul, [torch.empty(100 * 128, 1024, device="meta")])[0] > MAX_FLOPS


@pytest.mark.parametrize("path", TASK_FILES, ids=_id)
def test_get_inputs_reads_module_constants_when_called(path):
    task = load_module(path)
    shapes = [tuple(t.shape) for t in task.get_inputs()]
    assert shapes == [tuple(t.shape) for t in task.get_inputs()], "shapes are deterministic"

    constants = {k: v for k, v in vars(task).items() if type(v) is int and not k.startswith("_")}
    changes_a_shape = []
    for name, value in constants.items():
        setattr(task, name, value // 2 if value >= 4 else value + 1)
        try:
            changed = [tuple(t.shape) for t in task.get_inputs()] != shapes
        finally:
            setattr(task, name, value)
        if changed:
            changes_a_shape.append(name)
    assert changes_a_shape, f"no module constant changes an input shape: {sorted(constants)}"
    if "batch_size" in constants:
        assert "batch_size" in changes_a_shape
