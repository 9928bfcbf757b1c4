"""From npu_pool's TaskSpec to what the LLM is told, and which format it writes in.

The facts of a task that decide what memory may show it are decided here, once, and carried in
the brief (issue 52, point 2): its candidate format, its operator family (actors/families.py),
its signature's shape (actors/signature_shape.py) and whether its family's ladder, the first rung
and the worked example (issue 54), can be shown in its terms. The context, the slot request, the
retrieval's scope, the episode's start from the rung and the lessons read them from the brief.
"""

from __future__ import annotations

from functools import cache

from actors.config import LLMConfig
from actors.families import dominant_family, example_name, rung_name
from actors.messages import CandidateFormat, TaskBrief
from actors.prompt_templates import resolve_candidate_format
from actors.signature_shape import renaming, signature_shape
from memory_actor.items import MemoryItem
from memory_actor.seeding import example_items, family_rungs
from npu_pool.backends import Backend
from npu_pool.tasks.spec import TaskSpec


def candidate_format_for(config: LLMConfig, backend: Backend, task: TaskSpec) -> CandidateFormat:
    """The configured (or model-chosen) format, falling back to ModelNew where the kernel
    format cannot work: a backend without that compile route, or a task without a signature."""
    wanted = resolve_candidate_format(config)
    if wanted == "kernel" and ("kernel" not in backend.compile_routes or task.kernel_signature is None):
        return "modelnew"
    return wanted


# Kernel languages with prompt files of their own: the Ascend C kernel format is the same on a
# real NPU and on the CPU twin, so both get system_kernel_ascendc and example_kernel_ascendc.
PROMPT_FAMILIES = {"ascendc": "ascendc"}


def task_brief(task: TaskSpec, backend: Backend, candidate_format: CandidateFormat) -> TaskBrief:
    signature = None
    if candidate_format == "kernel" and task.kernel_signature is not None:
        signature = backend.render_kernel_signature(task.kernel_signature)
    prompt_family = PROMPT_FAMILIES.get(backend.kernel_language) if candidate_format == "kernel" else None
    family = dominant_family(task.source)
    return TaskBrief(task_id=task.task_id, backend=backend.name, reference_source=task.source, sizes=task.sizes,
                     signature=signature, candidate_format=candidate_format, prompt_family=prompt_family,
                     family=family, shape=signature_shape(signature),
                     example=family_example(backend.name, family, signature, candidate_format),
                     rung=family_rung(backend.name, family, signature, candidate_format))


def family_example(backend: str, family: str, signature: str | None, candidate_format: CandidateFormat) -> str | None:
    """The api item name of the family's verified worked example where a prompt of this task may
    show it: a kernel-format task only where the example's signature maps onto its own (it is
    shown renamed into the task's names, actors/renaming.py; another shape is not shown, so it
    is no option of the memory's decision either); a ModelNew task as it is."""
    return _ladder_item(_bundle_ladder(backend, "example").get(family), example_name(family), signature,
                        candidate_format)


def family_rung(backend: str, family: str, signature: str | None, candidate_format: CandidateFormat) -> str | None:
    """The api item name of the family's first rung (the simplest correct kernel, issue 54) that a
    prompt of this task may show: for a kernel-format task the first of the family's rungs (one per
    signature shape, memory_actor/ladder) whose signature maps onto its own; None where none does."""
    rungs = _bundle_rungs(backend).get(family, [])
    if candidate_format != "kernel" or not signature:
        return rungs[0].name if rungs else rung_name(family)
    return next((item.name for item in rungs if renaming(item.task_signature, signature)), None)


def _ladder_item(item: MemoryItem | None, name: str, signature: str | None,
                 candidate_format: CandidateFormat) -> str | None:
    if candidate_format != "kernel" or not signature:
        return name
    return item.name if item is not None and renaming(item.task_signature, signature) else None


@cache
def _bundle_rungs(backend: str) -> dict[str, list[MemoryItem]]:
    try:
        return family_rungs(backend)
    except ValueError:  # a backend without a bundle has no ladder
        return {}


@cache
def _bundle_ladder(backend: str, option: str) -> dict[str, MemoryItem]:
    """The family examples of `backend`'s bundle (what its banks are seeded with) declared under
    `option` (`example`, or `rung` for the first rungs: the entry's `option` field), by family."""
    try:
        return example_items(backend, option)
    except ValueError:  # a backend without a bundle has no ladder
        return {}
