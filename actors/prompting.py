"""Chat prompts from the templates in actors/prompts/, inside a character budget.

Templates hold `{{name}}` slots. Fixed parts (instructions, the signature, a draft's reference,
the start point's code, the backend's core API items) are never cut; the variable sections are
cut in a fixed order (a draft: ranked items, the previous attempt's code and details, the API
items named; `draft`), each with a visible marker, and every cut of the prompt sent is logged,
so a prompt never silently overflows the context. The worked example and the slot's pinned
family example are only shortened as a draft's last resort (a refine leaves the example out: its start point
is a kernel of the task itself). What a prompt may show (docs/memory.md, "What a
prompt shows"): exemplar code only from feasible kernels, failures only marked as such, no
code twice; each prompt reports the memory items that reached it, for credit and provenance.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from actors.code_extraction import code_fingerprint
from actors.config import LLMConfig
from actors.messages import (
    CandidateFormat,
    ContextItem,
    DraftRequest,
    Exemplar,
    LessonRequest,
    RefineRequest,
    ReviewRequest,
    TaskBrief,
)
from actors.prompt_sections import (
    NONE,
    Block,
    ClimbSection,
    FeedbackSection,
    ItemSection,
    Section,
    cut,
    cut_fenced,
    example_reference,
    example_signature,
    fit_sections,
    log_cuts,
)
from actors.prompt_templates import (
    EXAMPLE_SPLIT,
    KERNEL_LANGUAGES,
    RUNG_FORMS,
    first_template,
    format_sizes,
    render,
    template,
)
from actors.signature_shape import entry_declaration
from npu_pool.backends import timing_kind

log = structlog.get_logger("evokernel.prompts")

Messages = list[dict[str, str]]


@dataclass
class Prompt:
    """Chat messages and what reached them: `shown_ids` are the memory items the model sees
    (after truncation and deduplication), `example_id` the one shown as the worked example."""

    messages: Messages
    truncated: bool = False
    shown_ids: list[str] = field(default_factory=list)
    example_id: str | None = None
    over_budget: int = 0  # characters over the budget once every allowed cut is made


class _Dedupe:
    """Fingerprints of the code (and text) already in a prompt: nothing is shown twice."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def add(self, text: str | None) -> bool:
        """True (and remembered) when `text` is new or empty."""
        if not text or not text.strip():
            return True
        key = code_fingerprint(text)
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


_FENCED = re.compile(r"^\s*```[\w+#.\-]*\n(.*?)\n```\s*$", re.DOTALL)


class PromptBuilder:
    """Chat messages for drafting, refining, lessons and reviews, for one candidate format."""

    def __init__(self, config: LLMConfig, candidate_format: CandidateFormat):
        self.config = config
        self.format = candidate_format
        self.lang = "cpp" if candidate_format == "kernel" else "python"

    def _system(self, task: TaskBrief, core_api: list[ContextItem] | None = None) -> str:
        # The backend's own variant of the format's instructions first (the kernel format is
        # C++ with OpenMP on the CPU, host launch code plus __global__ kernels on CUDA), then
        # the generic one; plain variants only for the plain style (the modelnew format has
        # none: it is not a small model's format).
        base, own = f"system_{self.format}", f"system_{self.format}_{task.prompt_family or task.backend}"
        plain = [f"{own}_plain", f"{base}_plain"] if self.config.prompt_style == "plain" else []
        name = first_template(*plain[:1], own, *plain[1:], base)
        system = render(
            name,
            backend=task.backend,
            kernel_language=KERNEL_LANGUAGES.get(task.prompt_family or task.backend, "C++"),
        )
        # Static first (issue 42): the backend's notes and its core API items (the static brief
        # of every arm, none included, in the bundle's order) are the same bytes for every task of
        # the backend, so the server reads them once and reuses them across drafts and operators;
        # what differs per task comes after the worked example.
        guide = self._guide(task)
        notes = f"\n## Backend notes\n\n{guide}\n" if guide != NONE else ""
        blocks = [self._block(item) for item in core_api or []]
        return system + notes + ("\n## Backend API\n\n" + "\n\n".join(blocks) + "\n" if blocks else "")

    def _target(self, task: TaskBrief, worked_example: bool = False) -> str:
        if self.format == "kernel":
            signature = task.signature or 'extern "C" void kernel(...);'
            return render("target_kernel", signature=example_signature(signature) if worked_example else signature).strip()
        return render("target_modelnew").strip()

    def _signature_reminder(self, task: TaskBrief) -> str:
        """The kernel's entry line, as the prompt's last words: the line its code starts with. With a long
        prompt a small model wrote another operator's parameter list (`x, y, out` for ReLU),
        which the declaration the backend prepends then rejects."""
        if self.format != "kernel" or not task.signature:
            return ""
        # Only the entry's declaration: an Ascend C signature also shows the KernelTiling struct
        # the prelude defines, and repeated here it read as an invitation to define it again.
        declaration = entry_declaration(task.signature)  # an Ascend C entry is shown as the definition to fill
        entry = declaration[declaration.rfind('extern "C"'):] if 'extern "C"' in declaration else declaration
        one_line = " ".join(re.sub(r"//[^\n]*", "", entry).split()).replace("( ", "(").replace(" )", ")")
        # Given as the entry's first line, not a declaration to repeat: v5's compile errors were
        # names of other examples and `GMADDR`, never an entry the model was handed whole.
        return f" Start the kernel with exactly this line (another parameter list does not compile): `{one_line.rstrip(';').rstrip()}`"

    def _guide(self, task: TaskBrief) -> str:
        name = first_template(f"guide_{task.backend}_{self.format}", f"guide_{task.backend}")
        try:
            return template(name).strip()
        except FileNotFoundError:
            return NONE

    def _fence(self, code: str) -> str:
        return f"```{self.lang}\n{code.strip()}\n```"

    # -- memory items as the prompt shows them -------------------------------------------------

    def _block(self, item: ContextItem, fenced: bool = False) -> str:
        head = f"### [{item.kind}] {item.summary.strip()}".rstrip()
        body = item.content.strip()
        if not body:
            return head
        # Kernels are fenced so the model sees where one ends; lessons and API notes are prose.
        return f"{head}\n{self._fence(body) if fenced or item.kind == 'trace' else body}"

    def _child_block(self, item: ContextItem) -> str:
        if item.failed:
            reason = " ".join(item.reason.split())[:300] or "no reason recorded"
            head = f"### FAILED variant (do not repeat it): {reason}"
        else:
            head = f"### Variant: {item.summary.strip()}"
        return f"{head}\n{self._fence(item.content)}"

    def _items(self, name: str, api: list[ContextItem], items: list[ContextItem], dedupe: _Dedupe,
               pinned_item: ContextItem | None = None) -> ItemSection:
        """The slot's pinned family example first (a kernel: fenced); then memory items in rank
        order, then the API items their code names. Core API items are in the system turn
        (`_system`), not here."""
        pinned = ([Block(pinned_item.id, self._block(pinned_item, fenced=True))]
                  if pinned_item is not None and dedupe.add(pinned_item.content) else [])
        ranked = [Block(i.id, self._block(i)) for i in items if dedupe.add(i.content)]
        named = [Block(i.id, self._block(i)) for i in api if not i.core and dedupe.add(i.content)]
        return ItemSection(name, ranked, pinned, named)

    # -- the worked example --------------------------------------------------------------------

    def _example(self, exemplar: Exemplar | None, dedupe: _Dedupe, backend: str) -> tuple[Messages, str | None]:
        """The worked example turns: the slot's kernel (the family's example or a banked kernel of
        the family), as its own operator's task and answer (llm.exemplar_as_example), or the
        generic one. The exemplar's task in the generic example's form (its Model class, its sizes,
        its entry without comments); never cut: one that does not fit whole is not shown this way
        (`draft`)."""
        if not self.config.one_shot_example:
            return [], None
        if exemplar is not None and self.config.exemplar_as_example:
            task = exemplar.task
            user = render("example_task", task_id=task.task_id, reference=example_reference(task.reference_source),
                          sizes=format_sizes(task.sizes), target=self._target(task, worked_example=True)).strip()
            dedupe.add(exemplar.code)
            return ([{"role": "user", "content": user}, {"role": "assistant", "content": self._fence(exemplar.code)}],
                    exemplar.item_id)
        name = first_template(f"example_{self.format}_{backend}", f"example_{self.format}")
        user, _, assistant = template(name).partition(EXAMPLE_SPLIT)
        fenced = _FENCED.match(assistant)
        dedupe.add(fenced.group(1) if fenced else assistant)
        return [{"role": "user", "content": user.strip()}, {"role": "assistant", "content": assistant.strip()}], None

    def _assemble(self, task: TaskBrief, name: str, fixed: dict[str, str], sections: list[Section],
                  example: Messages, example_id: str | None, api: list[ContextItem],
                  steps: list[Callable[[int], int]], last_resort: list[Callable[[int], int]] = ()) -> Prompt:
        """The most shared first (issue 42): the system turn (instructions, backend notes, core
        API items: the same bytes for every task of a backend), the worked example's turns, then
        the user turn: the task, then what memory chose and the previous attempt. Over the budget, `steps`
        cut in order, then (only if still over) `last_resort`; the cuts are logged by the caller
        once it keeps the prompt (`_sent`)."""
        core = [item for item in api if item.core]
        system = {"role": "system", "content": self._system(task, core)}
        fixed_chars = len(render(name, **fixed, **{s.name: "" for s in sections})) + len(system["content"])

        def excess() -> int:
            return (fixed_chars + sum(len(m["content"]) for m in example) + sum(s.size() for s in sections)
                    - self.config.prompt_char_budget)

        truncated, _ = fit_sections(steps, excess())
        last, _ = fit_sections(list(last_resort), excess())
        over = excess()
        user = {"role": "user", "content": render(name, **fixed, **{s.name: s.render() for s in sections})}
        shown = [i.id for i in core] + ([example_id] if example_id else []) + [i for s in sections for i in s.shown_ids()]
        return Prompt([system, *example, user], truncated or last, list(dict.fromkeys(shown)), example_id, max(over, 0))

    def _sent(self, prompt: Prompt, sections: list[Section], cuts: list[dict] = ()) -> Prompt:
        """The prompt that goes to the model: its cuts logged (those of an abandoned layout never are)."""
        log_cuts([*cuts, *(c for s in sections for c in s.cuts)])
        if prompt.over_budget:
            log.warning("prompt_over_budget", over_chars=prompt.over_budget, budget=self.config.prompt_char_budget)
        return prompt

    # -- the prompts ---------------------------------------------------------------------------

    def draft(self, request: DraftRequest, generic_example: bool = True) -> Prompt:
        task = request.task
        dedupe = _Dedupe()
        for item in request.api:
            if item.core:
                dedupe.add(item.content)  # in the system turn
        example, example_id = (self._example(request.exemplar, dedupe, task.prompt_family or task.backend)
                               if generic_example else ([], None))
        previous = FeedbackSection("previous", NONE)
        if request.previous is not None:
            p = request.previous
            previous.head = f"It failed at the {p.gate} gate: {p.reason}\n{p.details}".strip()
            if p.code and dedupe.add(p.code):
                previous.code = self._fence(p.code)
            elif p.code:  # a small model copies the example: say so rather than print it again
                previous.head += "\nIts code was the worked example's code, unchanged: that example is another task."
        fixed = {"task_id": task.task_id, "sizes": format_sizes(task.sizes), "target": self._target(task),
                 "signature_reminder": self._signature_reminder(task),
                 "reference": task.reference_source.strip()}  # what the kernel must compute: never cut
        context = [c for c in request.context if c.id != example_id]
        memory = self._items("context", request.api, context, dedupe, request.pinned)
        sections: list[Section] = [previous, memory]
        # Over the budget, what gives way first: the ranked items, then the previous attempt's
        # code and details (its failure line stays), then the API items named.
        steps = [memory.shrink, previous.shrink, memory.shrink_api]
        if example_id is not None:
            # The exemplar takes the generic example's place in the same form, task then kernel: the
            # decision's options differ in content, never in layout (issue 41). What it may not crowd
            # out is what a pinned example may not either: it fits after the usual cuts, whole, or
            # the prompt is built without it as an example (pinned, or a context item).
            prompt = self._assemble(task, "draft", fixed, sections, example, example_id, request.api, steps)
            if prompt.over_budget == 0:
                return self._sent(prompt, sections)
            log.info("exemplar_too_large", item_id=example_id, over_chars=prompt.over_budget)
            return self.draft(request.model_copy(update={"exemplar": None}), generic_example)
        if request.pinned is not None and memory.pinned and example and example_id is None:
            # The pinned family example and the generic example do not both fit: the pinned one,
            # itself a kernel of the family in this format, takes the generic one's place before
            # anything of its own is cut.
            prompt = self._assemble(task, "draft", fixed, sections, example, example_id, request.api, steps)
            if prompt.over_budget == 0:
                return self._sent(prompt, sections)
            log.info("pinned_replaces_example", item_id=request.pinned.id, chars=len(request.pinned.content))
            return self.draft(request, generic_example=False)
        # The last resort: the pinned example (or, without one, the worked example) shortened from its
        # code's tail, with a marker; the reference stays whole.
        cuts: list[dict] = []
        comment = "//" if self.lang == "cpp" else "#"
        if memory.pinned:
            last_resort = [lambda over: memory.shorten_pinned(over, comment)]
        elif example:
            def shorten_example(over: int) -> int:
                before = len(example[-1]["content"])
                example[-1]["content"] = cut_fenced(example[-1]["content"], over, "the worked example", cuts, comment)
                return before - len(example[-1]["content"])

            last_resort = [shorten_example]
        else:
            last_resort = []
        prompt = self._assemble(task, "draft", fixed, sections, example, example_id, request.api, steps, last_resort)
        return self._sent(prompt, sections, cuts)

    def refine(self, request: RefineRequest) -> Prompt:
        task, start = request.task, request.start
        dedupe = _Dedupe()
        for item in request.api:
            if item.core:
                dedupe.add(item.content)  # in the system turn
        example, example_id = self._example(None, dedupe, task.prompt_family or task.backend)
        dedupe.add(start.code)
        latency = f"{start.latency_ms:.4g} ms"
        if timing_kind(task.backend) == "modelled":
            latency += " (modelled by the Ascend C twin, not measured)"
        if start.speedup_vs_eager:
            latency += f", {start.speedup_vs_eager:.2f}x the speed of PyTorch eager"
        # With the next rung up shown, the entry without its comments: the start point and the rung both
        # use every size field already, and the prompt must hold both kernels whole (issue 65).
        fixed = {"task_id": task.task_id, "sizes": format_sizes(task.sizes),
                 "target": self._target(task, worked_example=request.climb is not None),
                 "latency": latency, "lang": self.lang, "start_code": start.code.strip(),
                 "best": f"{request.best_latency_ms:.4g} ms",
                 "signature_reminder": self._signature_reminder(task),
                 # with the next rung up, the reference's Model class alone (its sizes have their line)
                 "reference": (example_reference(task.reference_source) if request.climb is not None
                               else task.reference_source.strip())}
        if request.climb is not None:  # the decision's option, like the start point: never cut
            dedupe.add(request.climb.code)
        children = ItemSection("children", [Block(c.id, self._child_block(c)) for c in request.children
                                            if dedupe.add(c.content)])
        # its first line (the twin's reading of where the time goes, issue 65) stays; the rest is cut at its tail
        profile = FeedbackSection("profile", start.profile.strip() or NONE)
        memory = self._items("context", request.api, request.context, dedupe)
        climb = self._climb(request)
        sections: list[Section] = [profile, climb, memory, children]
        cuts: list[dict] = []

        def leave_out_example(over: int) -> int:
            # The start point is a feasible kernel of this very task: the generic example goes
            # before the task's reference would (a twin refine with a 3,000-character start
            # kernel cut the reference to nothing and was still 1,700 characters over).
            freed = sum(len(m["content"]) for m in example)
            if freed:
                cuts.append(dict(section="the worked example", dropped_chars=freed, kept_chars=0, part="whole"))
                example.clear()
            return freed

        # Over the budget: the children, the ranked items, the named API items, the worked
        # example, the next rung's comments, then the profile's tail; never the reference, the start
        # point or the next rung's code.
        steps = [children.shrink, memory.shrink, memory.shrink_api, leave_out_example, climb.shrink, profile.shrink]
        prompt = self._assemble(task, "refine", fixed, sections, example, example_id, request.api, steps)
        return self._sent(prompt, sections, cuts)

    def _climb(self, request: RefineRequest) -> ClimbSection:
        """The next rung up (issue 65, actors/climb.py), where the refine decision shows it: its
        task, its kernel in this task's names, and the current kernel's formula to carry over."""
        climb = request.climb
        if climb is None:
            return ClimbSection("climb")
        form = RUNG_FORMS.get(climb.rung, climb.rung)
        if climb.merged:  # the formula already carried over: the kernel shown is this task's
            head = (f"\n## The next rung up: {form}\nThis task's kernel in that form: the current kernel's "
                    f"computation carried into a verified kernel of another task (`{climb.task_id}`), in this task's "
                    f"names:\n")
            tail = ("Check that it computes this task, then write it out as this task's kernel (correct it only "
                    "where it does not).\n")
            return ClimbSection("climb", climb.item_id, head, self._fence(climb.code), tail)
        formula = (f", which the current kernel computes as:\n{self._fence(climb.formula)}" if climb.formula.strip()
                   else ", the current kernel's formula.")
        head = (f"\n## The next rung up: {form}\nOne step faster, written for another task (`{climb.task_id}`) in this "
                f"task's names. Its task:\n"
                f"```python\n{example_reference(climb.reference)}\n```\nIts kernel:\n")
        tail = (f"Write this task's kernel in that form: keep its buffers, copies, flags, tail and block split, and "
                f"replace `{climb.task_id}`'s computation with this task's{formula}\n")
        return ClimbSection("climb", climb.item_id, head, self._fence(climb.code), tail)

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
