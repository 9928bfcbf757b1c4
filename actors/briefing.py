"""From npu_pool's TaskSpec to what the LLM is told, and which format it writes in."""

from __future__ import annotations

from actors.config import LLMConfig
from actors.messages import CandidateFormat, TaskBrief
from actors.prompting import resolve_candidate_format
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
    family = PROMPT_FAMILIES.get(backend.kernel_language) if candidate_format == "kernel" else None
    return TaskBrief(task_id=task.task_id, backend=backend.name, reference_source=task.source, sizes=task.sizes,
                     signature=signature, candidate_format=candidate_format, prompt_family=family)
