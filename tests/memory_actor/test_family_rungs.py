"""The ladder's first rungs (issue 54, point 2): per operator family and backend, the simplest
correct kernel for the family's example task (bundles/examples.yaml: operators outside every
benchmark pool, checked in test_family_examples.py), run through the backend's real gates
(anti-hack, compile, correctness at the fitted and the awkward sizes) on that task: cpu (plain
loops) and npu-twin (scalar GlobalTensor loops split over blocks in whole cache lines).

Builds are shared through the persistent test build cache, so a second run compiles nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from actors.families import FAMILIES, rung_name
from memory_actor.seeding import example_items, example_tasks, rung_items
from npu_pool.antihack import check_kernel_source
from npu_pool.backends import get_backend
from npu_pool.tasks.spec import load_task
from npu_pool.verdict import Candidate
from npu_pool.verifier import verify
from tests.npu_pool.harness_support import SMALL_BYTES, harness_config

LANGUAGE = {"cpu": "cpp", "npu-twin": "ascendc"}
# What a first rung leaves out: on the twin the UB pipeline (queues, buffers, flags between the
# pipes, copy parameter structs), so nothing can race and nothing is left undeclared; in C threads
# and vector pragmas.
NOT_IN_A_FIRST_RUNG = {
    "npu-twin": ("TPipe", "TQue", "TBuf", "LocalTensor", "SetFlag", "WaitFlag", "PipeBarrier", "DataCopy",
                 "DataCopyPad", "DataCopyExtParams", "DataCopyPadExtParams", "EnQue", "DeQue", "SyncAll"),
    "cpu": ("#pragma", "omp_", "_mm256", "__restrict"),
}


@pytest.fixture(scope="module")
def task_files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("rungs")
    paths = {}
    for task_id, (_, source) in example_tasks().items():
        paths[task_id] = folder / f"{task_id}.py"
        paths[task_id].write_text(source)
    return paths


@pytest.mark.parametrize("backend", ["cpu", "npu-twin"])
def test_every_family_has_a_first_rung_beside_its_example(backend, task_files):
    rungs, examples = rung_items(backend), example_items(backend)
    assert sorted(rungs) == sorted(FAMILIES)
    for family, item in rungs.items():
        assert item.name == rung_name(family) and "core" not in item.tags and "example" not in item.tags
        assert f"family:{family}" in item.tags and "rung" in item.tags
        # the same (pool-free) task as the family's idiomatic example: the rung differs only in how simply it is written
        assert item.task_id == examples[family].task_id and example_tasks()[item.task_id][0] == family
        assert item.id != examples[family].id and item.content != examples[family].content
        rejected = [f for f in check_kernel_source(item.content, LANGUAGE[backend]) if f.severity == "reject"]
        assert rejected == [], f"{backend} {family}: {rejected}"
        used = [name for name in NOT_IN_A_FIRST_RUNG[backend] if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", item.content)]
        assert used == [], f"{backend} {family}: a first rung uses {used}"
        task = load_task(task_files[item.task_id], max_bytes=SMALL_BYTES)
        rendered = get_backend(backend).render_kernel_signature(task.kernel_signature)
        assert item.task_signature.strip() == rendered.strip(), (backend, family, rendered)


def test_twin_rungs_split_over_blocks_in_whole_cache_lines():
    """Every twin rung takes its share by GetBlockIdx, rounds it to whole 64-byte lines (a device's
    data cache writes whole lines back: two blocks in one line overwrite each other) and ends the
    last share at the tail; each output index is written by one block only."""
    for family, item in rung_items("npu-twin").items():
        code = item.content
        assert "GetBlockIdx()" in code and "GetBlockNum()" in code, family
        assert re.search(r"constexpr int64_t LINE = 16;", code), family
        assert re.search(r"/ LINE \* LINE", code), family
        assert re.search(r"\? (begin|first) \+ per : \w+;", code), family


def _verified(backend: str, family: str, task_files: dict[str, Path], **config) -> None:
    item = rung_items(backend)[family]
    task = load_task(task_files[item.task_id], max_bytes=SMALL_BYTES)
    verdict = verify(task, Candidate(source=item.content, format="kernel"), harness_config(backend=backend, **config))
    assert verdict.feasible, f"{backend} {family}: {verdict.gate}/{verdict.category}: {verdict.reason}\n{verdict.details}"


@pytest.mark.parametrize("family", FAMILIES)
def test_cpu_rung_passes_the_gates_on_its_task(family, task_files):
    _verified("cpu", family, task_files)


@pytest.mark.parametrize("family", FAMILIES)
def test_npu_twin_rung_passes_the_gates_on_its_task(family, task_files):
    _verified("npu-twin", family, task_files, correctness_trials=2)
