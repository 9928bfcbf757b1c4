"""The backend bundles: they load, every backend has a template kernel per operator family,
the templates pass the static anti-hack gate, and each CPU template is a feasible kernel for
the suite task it names, judged by the real verifier (g++ builds shared through the
persistent test build cache, so a second run compiles nothing)."""

from __future__ import annotations

import re

import pytest

from memory_actor.seeding import BUNDLE_BACKENDS, bundle_items
from npu_pool.antihack import check_kernel_source
from npu_pool.tasks import load_task
from npu_pool.verdict import Candidate
from npu_pool.verifier import verify
from tests.npu_pool.harness_support import SMALL_BYTES, SUITE, harness_config

FAMILIES = ("elementwise", "row_reduction", "softmax_norm", "matmul", "window", "scan")
LANGUAGE = {"cpu": "cpp", "cuda": "cuda", "npu": "ascendc", "npu-twin": "ascendc"}
WORKED_FOR = re.compile(r"Worked for (\w+)")


def templates(backend: str) -> dict[str, str]:
    return {item.name.removeprefix("template_"): item.content for item in bundle_items(backend)
            if item.kind == "api" and (item.name or "").startswith("template_")}


@pytest.mark.parametrize("backend", BUNDLE_BACKENDS)
def test_bundle_loads_with_distinct_ids_and_a_template_per_family(backend):
    items = bundle_items(backend)
    assert len({item.id for item in items}) == len(items)
    assert all(item.summary and item.content for item in items)
    found = templates(backend)
    assert sorted(found) == sorted(FAMILIES)
    for family, code in found.items():
        assert WORKED_FOR.search(code), f"{backend} {family}: say which task the template was written for"
        assert 'extern "C"' in code and "kernel(" in code
    # templates are looked up by name, never pushed into every prompt
    assert not any("core" in item.tags for item in items if (item.name or "").startswith("template_"))


@pytest.mark.parametrize("backend", BUNDLE_BACKENDS)
def test_templates_pass_the_static_gate(backend):
    for family, code in templates(backend).items():
        rejected = [f for f in check_kernel_source(code, LANGUAGE[backend]) if f.severity == "reject"]
        assert rejected == [], f"{backend} {family}: {rejected}"


def _task_file(code: str):
    name = WORKED_FOR.search(code).group(1)
    [path] = SUITE.glob(f"level*/{name}.py")
    return path


@pytest.mark.parametrize("family", FAMILIES)
def test_cpu_template_is_feasible_for_its_task(family):
    code = templates("cpu")[family]
    task = load_task(_task_file(code), max_bytes=SMALL_BYTES)
    verdict = verify(task, Candidate(source=code, format="kernel"), harness_config())
    assert verdict.feasible, f"{family}: {verdict.gate}/{verdict.category}: {verdict.reason}\n{verdict.details}"
