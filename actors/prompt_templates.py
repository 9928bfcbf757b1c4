"""The prompt templates (actors/prompts/<name>.md, with `{{name}}` slots) and the few names a
prompt needs beside them: the kernel language of a backend, the speed rungs' forms, the candidate
format a model gets."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from actors.config import LLMConfig
from actors.messages import CandidateFormat

_SLOT = re.compile(r"\{\{(\w+)\}\}")
EXAMPLE_SPLIT = "=== assistant ==="
KERNEL_LANGUAGES = {"cpu": "C++ with OpenMP", "cuda": "CUDA C++", "npu": "Ascend C", "ascendc": "Ascend C"}
# The speed rungs of the ladder (issue 65) as a refine prompt names them.
RUNG_FORMS = {"ub_scalar": "tiles through UB (DataCopyPad in and out, flags), the formula on the scalar unit over the tile",
              "vector": "vector tiles (DataCopyPad into UB, vector instructions on whole tiles, flags)",
              "double_buffer": "double buffering (two-buffer queues: the next copy-in overlaps this tile's compute)"}


@cache
def template(name: str) -> str:
    """The text of actors/prompts/<name>.md."""
    return resources.files("actors").joinpath("prompts", f"{name}.md").read_text(encoding="utf-8")


def _exists(name: str) -> bool:
    return resources.files("actors").joinpath("prompts", f"{name}.md").is_file()


def first_template(*names: str) -> str:
    """The first of `names` that has a template: the most specific variant wins (a backend's
    own kernel-format instructions, e.g. system_kernel_cuda, before the generic ones)."""
    return next((n for n in names if _exists(n)), names[-1])


def render(name: str, **values: str) -> str:
    text = template(name)
    missing = set(_SLOT.findall(text)) - set(values)
    if missing:
        raise KeyError(f"prompt template {name!r} needs {sorted(missing)}")
    return _SLOT.sub(lambda m: values[m.group(1)], text).strip() + "\n"


def resolve_candidate_format(config: LLMConfig) -> CandidateFormat:
    """auto: the kernel format for a small model (`llm.small_model`, set by the local model's
    settings), ModelNew otherwise. Not guessed from the model's name: "qwen" is also a 72B model."""
    if config.candidate_format != "auto":
        return config.candidate_format
    return "kernel" if config.small_model else "modelnew"


def format_sizes(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "as in the source"
