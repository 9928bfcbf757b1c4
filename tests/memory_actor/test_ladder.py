"""The ladder (memory_actor/ladder, issues 54 and 64): per operator family and signature shape,
the simplest correct kernel, as source files, for tasks outside every benchmark pool; each run
through its backend's real gates (anti-hack, compile, correctness at the fitted and the awkward
sizes) on its task: cpu (plain loops) and npu-twin (scalar GlobalTensor loops split over blocks
in whole cache lines).

Builds are shared through the persistent test build cache, so a second run compiles nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from actors.families import FAMILIES, dominant_family, rung_name
from memory_actor import ladder
from memory_actor.seeding import example_items, family_rungs, rung_items
from npu_pool.antihack import check_kernel_source
from npu_pool.backends import get_backend
from npu_pool.tasks.spec import load_task
from npu_pool.verdict import Candidate
from npu_pool.verifier import verify
from tests.npu_pool.harness_support import SMALL_BYTES, harness_config

BACKEND = {"c": "cpu", "ascendc": "npu-twin"}
LANGUAGE = {"cpu": "cpp", "npu-twin": "ascendc"}
SUITES = Path(__file__).resolve().parents[2] / "suites"
POOL_MODULES = sorted((Path(__file__).resolve().parents[2] / "bench" / "learning").glob("*.py"))
# What a first rung leaves out: on the twin the UB pipeline (queues, buffers, flags between the
# pipes, copy parameter structs), so nothing can race and nothing is left undeclared; in C threads
# and vector pragmas.
NOT_IN_A_FIRST_RUNG = {
    "npu-twin": ("TPipe", "TQue", "TBuf", "LocalTensor", "SetFlag", "WaitFlag", "PipeBarrier", "DataCopy",
                 "DataCopyPad", "DataCopyExtParams", "DataCopyPadExtParams", "EnQue", "DeQue", "SyncAll"),
    "cpu": ("#pragma", "omp_", "_mm256", "__restrict"),
}
ALL_RUNGS = [r for language in ("c", "ascendc") for r in ladder.rungs(language)]


def _id(rung: ladder.Rung) -> str:
    return f"{rung.language}/{rung.task_id}.{rung.rung}"


@pytest.fixture(scope="module")
def task_files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("rungs")
    paths = {}
    for task_id in {r.task_id for r in ALL_RUNGS}:
        paths[task_id] = folder / f"{task_id}.py"
        paths[task_id].write_text(ladder.task_source(task_id)[1])
    return paths


@pytest.mark.parametrize("backend", ["cpu", "npu-twin"])
def test_every_family_has_a_first_rung_beside_its_example(backend):
    rungs, examples = rung_items(backend), example_items(backend)
    assert sorted(rungs) == sorted(FAMILIES)
    for family, item in rungs.items():
        assert item.name == rung_name(family) and "core" not in item.tags
        assert f"family:{family}" in item.tags and "example" in item.tags and "option:rung" in item.tags
        # the same (pool-free) task as the family's idiomatic example: the rung differs only in how simply it is written
        assert item.task_id == examples[family].task_id
        assert item.id != examples[family].id and item.content != examples[family].content


def test_the_ladder_s_tasks_are_outside_every_benchmark_pool():
    assert POOL_MODULES, "no bench/learning module to check the tasks' operators against"
    for task_id, (family, source) in ladder.ladder_tasks().items():
        assert family in FAMILIES, task_id
        assert dominant_family(source) == family, task_id
        name = task_id.split("_", 1)[1]
        assert not list(SUITES.rglob(f"*_{name}.py")), f"{task_id} is in a suite"
        assert all(name not in path.read_text() for path in POOL_MODULES), f"{task_id} is in a pool"


@pytest.mark.parametrize("backend", ["cpu", "npu-twin"])
def test_each_rung_task_s_signature_is_current(backend, task_files):
    """signatures.yaml holds what the backend renders today (rewrite it with
    `python -m memory_actor.ladder --write-signatures`)."""
    stored = ladder.signatures()[ladder.LANGUAGES[backend]]
    for item in (i for items in family_rungs(backend).values() for i in items):
        task = load_task(task_files[item.task_id], max_bytes=SMALL_BYTES)
        rendered = get_backend(backend).render_kernel_signature(task.kernel_signature)
        assert stored[item.task_id].strip() == rendered.strip() == item.task_signature.strip(), item.name


@pytest.mark.parametrize("backend", ["cpu", "npu-twin"])
def test_first_rungs_are_the_simplest_form_and_pass_the_static_gate(backend):
    for items in family_rungs(backend).values():
        for item in items:
            rejected = [f for f in check_kernel_source(item.content, LANGUAGE[backend]) if f.severity == "reject"]
            assert rejected == [], f"{item.name}: {rejected}"
            used = [name for name in NOT_IN_A_FIRST_RUNG[backend]
                    if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", item.content)]
            assert used == [], f"{item.name}: a first rung uses {used}"


def test_twin_first_rungs_split_over_blocks_in_whole_cache_lines():
    """Every twin first rung takes its share by GetBlockIdx, rounds it to whole 64-byte lines (a
    device's data cache writes whole lines back: two blocks in one line overwrite each other) and
    ends the last share at the tail; each output index is written by one block only."""
    for item in (i for items in family_rungs("npu-twin").values() for i in items):
        code = item.content
        assert "GetBlockIdx()" in code and "GetBlockNum()" in code, item.name
        assert re.search(r"constexpr int64_t LINE = 16;", code), item.name
        assert re.search(r"/ LINE \* LINE", code), item.name
        assert re.search(r"\? (begin|first) \+ per : \w+;", code), item.name


@pytest.mark.parametrize("rung", ALL_RUNGS, ids=_id)
def test_every_rung_passes_its_backend_s_gates_on_its_task(rung, task_files):
    backend = BACKEND[rung.language]
    task = load_task(task_files[rung.task_id], max_bytes=SMALL_BYTES)
    config = harness_config(backend=backend, **({"correctness_trials": 2} if backend == "npu-twin" else {}))
    verdict = verify(task, Candidate(source=rung.content, format="kernel"), config)
    assert verdict.feasible, f"{_id(rung)}: {verdict.gate}/{verdict.category}: {verdict.reason}\n{verdict.details}"
