"""Chat prompts from the templates in actors/prompts/, inside a character budget.

Templates hold `{{name}}` slots. Fixed parts (instructions, the signature, the start point's
code) are never cut; the variable sections are cut, least important first, each with a
visible marker, and every cut is logged, so a prompt never silently overflows the context.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

import structlog

from actors.config import LLMConfig
from actors.messages import (
    CandidateFormat,
    ContextItem,
    DraftRequest,
    LessonRequest,
    RefineRequest,
    ReviewRequest,
    TaskBrief,
)

log = structlog.get_logger("evokernel.prompts")

Messages = list[dict[str, str]]
_SLOT = re.compile(r"\{\{(\w+)\}\}")
EXAMPLE_SPLIT = "=== assistant ==="
NONE = "(none)"
KERNEL_LANGUAGES = {"cpu": "C++ with OpenMP", "cuda": "CUDA C++", "npu": "Ascend C"}
SMALL_MODEL = re.compile(r"(0\.5b|1\.5b|\b3b|\b7b|qwen|local|gguf)", re.IGNORECASE)


@cache
def template(name: str) -> str:
    """The text of actors/prompts/<name>.md."""
    return resources.files("actors").joinpath("prompts", f"{name}.md").read_text(encoding="utf-8")


def render(name: str, **values: str) -> str:
    text = template(name)
    missing = set(_SLOT.findall(text)) - set(values)
    if missing:
        raise KeyError(f"prompt template {name!r} needs {sorted(missing)}")
    return _SLOT.sub(lambda m: values[m.group(1)], text).strip() + "\n"


def resolve_candidate_format(config: LLMConfig) -> CandidateFormat:
    """auto: the kernel format for small local models, ModelNew otherwise."""
    if config.candidate_format != "auto":
        return config.candidate_format
    small = bool(SMALL_MODEL.search(config.model)) or config.model == LLMConfig.model_fields["model"].default
    return "kernel" if small else "modelnew"


def cut(text: str, limit: int, what: str) -> str:
    """`text` shortened to about `limit` characters, head kept, with a visible marker."""
    if len(text) <= limit:
        return text
    dropped = len(text) - max(limit, 0)
    log.info("prompt_truncated", section=what, dropped_chars=dropped, kept_chars=max(limit, 0))
    return text[: max(limit, 0)].rstrip() + f"\n[... {dropped} characters of {what} cut to fit the prompt budget ...]"


def fit_sections(sections: list[tuple[str, str]], room: int) -> tuple[dict[str, str], bool]:
    """Cut the sections, last listed (least important) first, until they fit in `room` chars."""
    values = dict(sections)
    excess = sum(len(v) for v in values.values()) - room
    truncated = False
    for name, text in reversed(sections):
        if excess <= 0:
            break
        keep = max(len(text) - excess, 0)
        values[name] = cut(text, keep, name)
        excess -= len(text) - keep
        truncated = True
    return values, truncated


def format_items(items: list[ContextItem]) -> str:
    if not items:
        return NONE
    blocks = []
    for item in items:
        head = f"### [{item.kind}] {item.summary.strip()}".rstrip()
        blocks.append(f"{head}\n{item.content.strip()}" if item.content.strip() else head)
    return "\n\n".join(blocks)


def format_sizes(sizes: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sizes.items()) or "as in the source"


class PromptBuilder:
    """Chat messages for drafting, refining, lessons and reviews, for one candidate format."""

    def __init__(self, config: LLMConfig, candidate_format: CandidateFormat):
        self.config = config
        self.format = candidate_format
        self.lang = "cpp" if candidate_format == "kernel" else "python"

    def _system(self, task: TaskBrief) -> str:
        name = f"system_{self.format}"
        if self.config.prompt_style == "plain" and resources.files("actors").joinpath("prompts", f"{name}_plain.md").is_file():
            name += "_plain"  # the modelnew format has no plain variant: it is not a small model's format
        return render(
            name,
            backend=task.backend,
            kernel_language=KERNEL_LANGUAGES.get(task.backend, "C++"),
        )

    def _target(self, task: TaskBrief) -> str:
        if self.format == "kernel":
            return render("target_kernel", signature=task.signature or 'extern "C" void kernel(...);').strip()
        return render("target_modelnew").strip()

    def _guide(self, task: TaskBrief) -> str:
        try:
            return template(f"guide_{task.backend}").strip()
        except FileNotFoundError:
            return NONE

    def _example(self) -> Messages:
        if not self.config.one_shot_example:
            return []
        user, _, assistant = template(f"example_{self.format}").partition(EXAMPLE_SPLIT)
        return [{"role": "user", "content": user.strip()}, {"role": "assistant", "content": assistant.strip()}]

    def _assemble(self, task: TaskBrief, name: str, fixed: dict[str, str],
                  sections: list[tuple[str, str]]) -> tuple[Messages, bool]:
        """System turn, optional example turns, then the user turn; returns (messages, truncated)."""
        system = {"role": "system", "content": self._system(task)}
        example = self._example()
        skeleton = render(name, **fixed, **{k: "" for k, _ in sections})
        room = self.config.prompt_char_budget - len(skeleton) - len(system["content"])
        example_chars = sum(len(m["content"]) for m in example)
        dropped_example = bool(example) and room - example_chars < sum(len(v) for _, v in sections) // 2
        if dropped_example:  # real context is worth more than the worked example
            log.info("prompt_truncated", section="one-shot example", dropped_chars=example_chars)
            example = []
        values, truncated = fit_sections(sections, room - sum(len(m["content"]) for m in example))
        user = {"role": "user", "content": render(name, **fixed, **values)}
        return [system, *example, user], truncated or dropped_example

    def draft(self, request: DraftRequest) -> tuple[Messages, bool]:
        task = request.task
        previous = NONE
        if request.previous is not None:
            p = request.previous
            previous = f"It failed at the {p.gate} gate: {p.reason}\n{p.details}".strip()
            if p.code:
                previous += f"\nIts code:\n```{self.lang}\n{p.code.strip()}\n```"
        fixed = {"task_id": task.task_id, "sizes": format_sizes(task.sizes), "target": self._target(task),
                 "guide": self._guide(task)}
        sections = [("reference", task.reference_source.strip()), ("previous", previous),
                    ("context", format_items(request.api + request.context))]
        return self._assemble(task, "draft", fixed, sections)

    def refine(self, request: RefineRequest) -> tuple[Messages, bool]:
        task, start = request.task, request.start
        latency = f"{start.latency_ms:.4g} ms"
        if start.speedup_vs_eager:
            latency += f", {start.speedup_vs_eager:.2f}x the speed of PyTorch eager"
        fixed = {"task_id": task.task_id, "sizes": format_sizes(task.sizes), "target": self._target(task),
                 "latency": latency, "lang": self.lang, "start_code": start.code.strip(),
                 "best": f"{request.best_latency_ms:.4g} ms", "guide": self._guide(task)}
        sections = [("reference", task.reference_source.strip()), ("profile", start.profile.strip() or NONE),
                    ("context", format_items(request.api + request.context)),
                    ("children", format_items(request.children))]
        return self._assemble(task, "refine", fixed, sections)

    def lesson(self, request: LessonRequest) -> Messages:
        question = ("What made this version faster than its start point?" if request.improved
                    else "Why did it fail, and what should the next attempt do differently?")
        budget = self.config.prompt_char_budget // 2
        start = ""
        if request.start_code:
            start = "\n" + render("lesson_start", lang=self.lang, code=cut(request.start_code.strip(), budget // 3, "start point"))
        user = render("lesson", task_id=request.task.task_id, backend=request.task.backend, stage=request.stage,
                      outcome=cut(request.outcome, budget // 6, "outcome"), start=start, lang=self.lang,
                      code=cut(request.code.strip(), budget // 3, "code"), question=question)
        return [{"role": "system", "content": render("lesson_system")}, {"role": "user", "content": user}]

    def review(self, request: ReviewRequest) -> Messages:
        budget = self.config.prompt_char_budget
        user = render("review", task_id=request.task.task_id, backend=request.task.backend,
                      flags=", ".join(request.flags), measurements=request.measurements or "",
                      reference=cut(request.task.reference_source.strip(), budget // 3, "reference"),
                      lang=self.lang, code=cut(request.code.strip(), budget // 2, "code"))
        return [{"role": "system", "content": render("review_system")}, {"role": "user", "content": user}]
