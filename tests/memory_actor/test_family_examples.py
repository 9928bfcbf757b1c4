"""The family worked examples (issue 41, point 3): one complete kernel per operator family and
backend, for a representative operator outside every benchmark pool (bundles/examples.yaml),
run through its backend's real gates (anti-hack, compile, correctness) on that operator.

cpu and npu-twin run here (real g++ builds shared through the persistent test build cache, so a
second run compiles nothing); cuda where a GPU and nvcc are present, skipped otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.families import FAMILIES, dominant_family, example_name
from memory_actor.seeding import example_items, example_tasks
from npu_pool.antihack import check_kernel_source
from npu_pool.backends import backend_ready, get_backend
from npu_pool.tasks.spec import load_task
from npu_pool.verdict import Candidate
from npu_pool.verifier import verify
from tests.npu_pool.harness_support import SMALL_BYTES, harness_config

LANGUAGE = {"cpu": "cpp", "cuda": "cuda", "npu": "ascendc", "npu-twin": "ascendc"}
POOLS = Path(__file__).resolve().parents[2] / "suites"
# the learning benchmark's modules, its operator pools among them (bench/learning/plan.py)
POOL_MODULES = sorted((Path(__file__).resolve().parents[2] / "bench" / "learning").glob("*.py"))


@pytest.fixture(scope="module")
def task_files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("examples")
    paths = {}
    for task_id, (_, source) in example_tasks().items():
        paths[task_id] = folder / f"{task_id}.py"
        paths[task_id].write_text(source)
    return paths


def test_one_task_per_family_outside_every_benchmark_pool():
    tasks = example_tasks()
    assert POOL_MODULES, "no bench/learning module to check the examples' operators against"
    assert sorted(family for family, _ in tasks.values()) == sorted(FAMILIES)
    for task_id, (family, source) in tasks.items():
        assert dominant_family(source) == family, task_id
        name = task_id.split("_", 1)[1]
        assert not list(POOLS.rglob(f"*_{name}.py")), f"{task_id} is in a suite"
        assert all(name not in path.read_text() for path in POOL_MODULES), f"{task_id} is in a pool"


@pytest.mark.parametrize("backend", ["cpu", "cuda", "npu", "npu-twin"])
def test_every_family_has_one_complete_example_with_its_tasks_signature(backend, task_files):
    examples = example_items(backend)
    assert sorted(examples) == sorted(FAMILIES)
    for family, item in examples.items():
        assert item.name == example_name(family) and "core" not in item.tags
        assert f"family:{family}" in item.tags and example_tasks()[item.task_id][0] == family
        rejected = [f for f in check_kernel_source(item.content, LANGUAGE[backend]) if f.severity == "reject"]
        assert rejected == [], f"{backend} {family}: {rejected}"
        task = load_task(task_files[item.task_id], max_bytes=SMALL_BYTES)
        rendered = get_backend(backend).render_kernel_signature(task.kernel_signature)
        assert item.task_signature.strip() == rendered.strip(), (backend, family, rendered)


def _verified(backend: str, family: str, task_files: dict[str, Path], **config) -> None:
    item = example_items(backend)[family]
    task = load_task(task_files[item.task_id], max_bytes=SMALL_BYTES)
    verdict = verify(task, Candidate(source=item.content, format="kernel"), harness_config(backend=backend, **config))
    assert verdict.feasible, f"{backend} {family}: {verdict.gate}/{verdict.category}: {verdict.reason}\n{verdict.details}"


@pytest.mark.parametrize("family", FAMILIES)
def test_cpu_example_passes_the_gates_on_its_task(family, task_files):
    _verified("cpu", family, task_files)


@pytest.mark.parametrize("family", FAMILIES)
def test_npu_twin_example_passes_the_gates_on_its_task(family, task_files):
    _verified("npu-twin", family, task_files, correctness_trials=2)


@pytest.mark.parametrize("family", FAMILIES)
def test_cuda_example_passes_the_gates_on_its_task(family, task_files):
    ready, why = backend_ready("cuda", "kernel")
    if not ready:
        pytest.skip(why)
    _verified("cuda", family, task_files)


def _real_nvcc() -> str | None:
    from npu_pool.backends import cuda as cuda_backend
    from npu_pool.backends import cuda_kernel

    nvcc = cuda_backend.find_nvcc()
    return None if nvcc is None or cuda_kernel.nvcc_version(nvcc) == "unknown" else nvcc


@pytest.mark.slow  # nvcc takes ~20 s a unit; builds are cached by source
@pytest.mark.parametrize("family", FAMILIES)
def test_cuda_example_compiles_with_nvcc_where_there_is_no_gpu(family, task_files, tmp_path):
    """The compile gate alone, where nvcc is installed but no GPU can run the kernel."""
    from npu_pool.backends import cuda_kernel
    from npu_pool.paths import cache_root

    nvcc = _real_nvcc()
    if nvcc is None:
        pytest.skip("nvcc (the CUDA toolkit) is not installed")
    item = example_items("cuda")[family]
    task = load_task(task_files[item.task_id], max_bytes=SMALL_BYTES)
    artifact = cuda_kernel.build_kernel(item.content, task.kernel_signature, nvcc, (9, 0), tmp_path,
                                        cache_root() / "test-build" / "cuda-kernels")
    assert artifact.stat().st_size > 0
