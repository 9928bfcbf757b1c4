"""The Ascend C kernel format's own prompts: system prompt, worked example and guide for the npu
and npu-twin backends, within the local model's 8,000-character budget with the npu bundle's
core API items; modelled timing said as such."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.briefing import task_brief
from actors.config import LLMConfig
from actors.messages import ContextItem, DraftRequest, Feedback, RefineRequest, StartPoint
from actors.prompting import PromptBuilder
from memory_actor.seeding import bundle_items
from npu_pool.backends import get_backend
from npu_pool.tasks.spec import load_task

SUITE = Path(__file__).resolve().parents[2] / "suites" / "cpu" / "level1"
LOCAL_MODEL = dict(prompt_char_budget=8000, prompt_style="plain", small_model=True, candidate_format="kernel")


def core_api(backend: str) -> list[ContextItem]:
    return [ContextItem(id=i.id, kind=i.kind, summary=i.summary, content=i.content, core=True)
            for i in bundle_items(backend) if "core" in i.tags]


@pytest.mark.parametrize("backend", ["npu", "npu-twin"])
def test_ascend_c_backends_get_the_ascend_c_prompts(backend):
    brief = task_brief(load_task(SUITE / "4_ReLU.py"), get_backend(backend), "kernel")
    assert brief.prompt_family == "ascendc"
    messages = PromptBuilder(LLMConfig(**LOCAL_MODEL), "kernel").draft(DraftRequest(task=brief, api=core_api("npu"))).messages
    system, example_user, example_answer, user = (m["content"] for m in messages)
    assert system.startswith("You write ONE Ascend C kernel") and f"for the {backend} backend" in system
    assert "OpenMP" not in system and "g++" not in system
    assert "0_ScaledAdd" in example_user and "outGm.SetValue(i, xGm.GetValue(i) * t.alpha + yGm.GetValue(i));" in example_answer
    guide = "A CPU twin checks the kernel" if backend == "npu-twin" else "Tile each block's share"
    assert guide in system  # the backend notes are in the static system turn (issue 42)


def test_other_backends_keep_their_prompts():
    brief = task_brief(load_task(SUITE / "4_ReLU.py"), get_backend("cpu"), "kernel")
    assert brief.prompt_family is None
    system = PromptBuilder(LLMConfig(**LOCAL_MODEL), "kernel").draft(DraftRequest(task=brief)).messages[0]["content"]
    assert "Ascend C" not in system


@pytest.mark.parametrize("task", ["4_ReLU", "18_Softmax", "24_SquareMatmul"])
def test_a_cold_ascend_c_draft_with_the_example_fits_the_local_models_budget(task):
    brief = task_brief(load_task(SUITE / f"{task}.py"), get_backend("npu-twin"), "kernel")
    prompt = PromptBuilder(LLMConfig(**LOCAL_MODEL), "kernel").draft(DraftRequest(task=brief, api=core_api("npu-twin")))
    assert not prompt.truncated
    assert sum(len(m["content"]) for m in prompt.messages) <= 8000
    assert len(prompt.messages) == 4  # the worked example is there


def test_the_refine_prompt_says_the_twins_latency_is_modelled():
    brief = task_brief(load_task(SUITE / "4_ReLU.py"), get_backend("npu-twin"), "kernel")
    start = StartPoint(id="t1", code="using namespace AscendC;", latency_ms=0.0042, speedup_vs_eager=1.3)
    user = PromptBuilder(LLMConfig(**LOCAL_MODEL), "kernel").refine(RefineRequest(task=brief, start=start, best_latency_ms=0.0042)).messages[-1]["content"]
    assert "0.0042 ms (modelled by the Ascend C twin, not measured)" in user


def family_example(name: str) -> ContextItem:
    item = next(i for i in bundle_items("npu-twin") if i.name == name)
    return ContextItem(id=item.id, kind=item.kind, summary=item.summary, content=item.content)


@pytest.mark.parametrize("task, family", [("4_ReLU", "example_elementwise"), ("18_Softmax", "example_softmax_norm"),
                                          ("24_SquareMatmul", "example_matmul")])
def test_a_pinned_family_example_takes_the_generic_examples_place_for_the_local_model(task, family):
    """The pinned family example and the generic Ascend C example together overflow 8,000 characters: the pinned one, a
    kernel of the task's own family, is shown instead of the example, and the reference stays whole."""
    brief = task_brief(load_task(SUITE / f"{task}.py"), get_backend("npu-twin"), "kernel")
    pinned = family_example(family)
    for previous in (None, Feedback(gate="compile", reason="'n' is not declared (kernel.cpp:36)",
                                    code="using namespace AscendC;\n" + "constexpr int32_t UNUSED = 0;\n" * 60)):
        prompt = PromptBuilder(LLMConfig(**LOCAL_MODEL), "kernel").draft(
            DraftRequest(task=brief, api=core_api("npu-twin"), pinned=pinned, previous=previous))
        user = prompt.messages[-1]["content"]
        assert len(prompt.messages) == 2 and prompt.example_id is None  # system, user: no generic example
        assert brief.reference_source.strip() in user and pinned.content.strip() in user and pinned.id in prompt.shown_ids
        assert sum(len(m["content"]) for m in prompt.messages) <= 8000
        if previous is not None:
            tail = user.split("## Your previous attempt at this task")[1]
            assert "'n' is not declared (kernel.cpp:36)" in tail and tail.count("```") % 2 == 0


def test_the_core_api_items_use_no_undeclared_names():
    """A snippet line a small model copies must not name a variable it never declared (a local-model
    draft failed on `'n' is not declared`, the name the TQue item used)."""
    system = "\n".join(i.content for i in core_api("npu-twin"))
    assert "(c, a, n)" not in system and "(n * sizeof" not in system


def bundle_request(task: str, family: str, previous: Feedback | None) -> DraftRequest:
    """A twin draft as an episode asks it from a seeded bank: the core API items, the other API
    items as named ones, the bundle's practice items ranked, the slot's pinned family example."""
    items = bundle_items("npu-twin")
    as_item = lambda i: ContextItem(id=i.id, kind=i.kind, summary=i.summary, content=i.content)  # noqa: E731
    named = [as_item(i) for i in items if i.kind == "api" and "core" not in i.tags and "example" not in i.tags]
    ranked = [as_item(i) for i in items if i.kind != "api"]
    brief = task_brief(load_task(SUITE / f"{task}.py"), get_backend("npu-twin"), "kernel")
    return DraftRequest(task=brief, api=core_api("npu-twin") + named, context=ranked, pinned=family_example(family),
                        previous=previous)


@pytest.mark.parametrize("task, family", [("4_ReLU", "example_elementwise"), ("46_Hardtanh", "example_elementwise"),
                                          ("20_LayerNorm", "example_softmax_norm"),
                                          ("40_MSELoss", "example_row_reduction")])
def test_the_local_models_budget_keeps_the_reference_and_the_pinned_example_and_cuts_ranked_items_first(task, family):
    """With the whole npu bundle in play at 8,000 characters: the reference whole (a local-model
    run logged `prompt_truncated section=reference kept_chars=0`), the pinned example shown (at worst
    without its comments, then shortened at its tail), the previous attempt's failure line kept;
    ranked items give way before the previous attempt's code, and that before the named API items."""
    import structlog

    previous = Feedback(gate="compile", reason="'yGm' is not declared (kernel.cpp:30)", details="kernel.cpp:30: error",
                        code="using namespace AscendC;\n" + "constexpr int32_t UNUSED = 0;\n" * 40)
    for budget in (8000, 12000, 16000, 40000):
        request = bundle_request(task, family, previous)
        with structlog.testing.capture_logs() as logs:
            prompt = PromptBuilder(LLMConfig(**{**LOCAL_MODEL, "prompt_char_budget": budget}), "kernel").draft(request)
        user = prompt.messages[-1]["content"]
        assert request.task.reference_source.strip() in user, budget
        assert sum(len(m["content"]) for m in prompt.messages) <= budget and prompt.over_budget == 0
        assert request.pinned.id in prompt.shown_ids and "### [api] worked example" in user
        kernel_lines = [line.split("  //")[0].rstrip() for line in request.pinned.content.splitlines()
                        if line.strip() and not line.lstrip().startswith("//")]
        shortened = "pinned kernel cut here" in user
        assert shortened or all(line in user for line in kernel_lines), budget  # whole, or cut with a marker
        tail = user.split("## Your previous attempt at this task")[1]
        assert "It failed at the compile gate: 'yGm' is not declared (kernel.cpp:30)" in tail and tail.count("```") % 2 == 0
        ranked_shown = [i.id for i in request.context if i.id in prompt.shown_ids]
        named_shown = [i.id for i in request.api if not i.core and i.id in prompt.shown_ids]
        code_shown = "constexpr int32_t UNUSED" in tail
        if not code_shown:  # the previous attempt's code gives way only once every ranked item has
            assert not ranked_shown, budget
        if len(named_shown) < len(named := [i for i in request.api if not i.core]):  # and the named API items after it
            assert not code_shown and not ranked_shown, budget
        assert len(named) > 5 and len(request.context) == 5
        if budget == 8000:
            assert not ranked_shown and len(prompt.messages) == 2  # the family's example in the generic one's place
        if budget == 40000:
            assert ranked_shown and named_shown and code_shown and len(prompt.messages) == 4 and not shortened
        sections = {e.get("section") for e in logs if e["event"] == "prompt_truncated"}
        assert "reference" not in sections and not any("prompt_over_budget" == e["event"] for e in logs)


@pytest.mark.parametrize("task", ["4_ReLU", "46_Hardtanh"])
def test_a_twin_refine_keeps_the_reference_and_leaves_the_example_out_first(task):
    """A refine of a example-sized start kernel at the local model's 8,000 characters: the worked
    example goes (the start point is this task's own kernel) before the profile, and the reference
    and the start point stay whole (the reference used to be cut to nothing, and the prompt was
    still over the budget)."""
    import structlog

    from actors.messages import StartPoint

    request = bundle_request(task, "example_elementwise", None)
    start = StartPoint(id="s", code=request.pinned.content, latency_ms=0.004, speedup_vs_eager=0.9,
                       profile="bound: memory\nhint: longer tiles")
    with structlog.testing.capture_logs() as logs:
        prompt = PromptBuilder(LLMConfig(**LOCAL_MODEL), "kernel").refine(RefineRequest(
            task=request.task, start=start, best_latency_ms=0.004, api=request.api, context=request.context))
    user = prompt.messages[-1]["content"]
    assert [m["role"] for m in prompt.messages] == ["system", "user"]  # no example turns
    assert request.task.reference_source.strip() in user and start.code.strip() in user
    cuts = [e for e in logs if e["event"] == "prompt_truncated"]
    assert {"section": "the worked example", "part": "whole"}.items() <= cuts[0].items()
    assert "reference" not in {e.get("section") for e in cuts}
    total = sum(len(m["content"]) for m in prompt.messages)
    assert total - prompt.over_budget <= 8000 and (prompt.over_budget == 0) == (total <= 8000)


@pytest.mark.parametrize("task, family", [("7_Sigmoid", "example_elementwise"), ("39_ReverseCumsum", "example_scan"),
                                          ("25_RectMatmul", "example_matmul"), ("34_Conv1d", "example_conv")])
def test_the_familys_example_is_a_worked_example_where_the_prompt_holds_it_whole_else_pinned(task, family):
    """Issue 41: the family's example in the generic example's form (its task, then its kernel),
    whenever the prompt holds it whole; otherwise pinned as before. Never cut as a worked example."""
    import structlog

    from actors.context import exemplar_brief
    from actors.messages import Exemplar

    path = SUITE / f"{task}.py"
    brief = task_brief(load_task(path), get_backend("npu-twin"), "kernel")
    item = next(i for i in bundle_items("npu-twin") if i.name == family)
    exemplar = Exemplar(item_id=item.id, task=exemplar_brief(item, brief, str(path)), code=item.content)
    request = DraftRequest(task=brief, api=core_api("npu-twin"), exemplar=exemplar, pinned=family_example(family))
    for budget in (8000, 12000):
        with structlog.testing.capture_logs() as logs:
            prompt = PromptBuilder(LLMConfig(**{**LOCAL_MODEL, "exemplar_as_example": True,
                                                "prompt_char_budget": budget}), "kernel").draft(request)
        total = sum(len(m["content"]) for m in prompt.messages)
        assert total <= budget and item.id in prompt.shown_ids and brief.reference_source.strip() in prompt.messages[-1]["content"]
        if prompt.example_id is not None:  # task and answer in the example turns, the kernel whole and once
            _, question, answer, user = (m["content"] for m in prompt.messages)
            assert question.startswith(f"## Task {item.task_id}") and "class Model" in question
            assert "get_inputs" not in question and "//" not in question.split("## What to write")[1]
            assert item.content.strip() in answer and item.content.strip() not in user
        else:  # pinned in the generic example's place, whole or shortened, and said so in the log
            assert len(prompt.messages) == 2 and any(e["event"] == "exemplar_too_large" for e in logs)
        if budget == 12000:
            assert prompt.example_id == item.id
        elif family in ("example_elementwise", "example_scan"):  # the compact ones fit the local model's budget
            assert prompt.example_id == item.id


def test_a_worked_examples_task_is_its_model_class_and_its_entry_without_comments():
    from actors.prompt_sections import example_reference, example_signature

    source = ('"""Doc."""\nimport torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    """Doc."""\n\n'
              '    def forward(self, x):\n        """Doc."""\n        return torch.abs(x)\n\n\nrows = 4\n\n\n'
              'def get_inputs():\n    return [torch.randn(rows)]\n')
    assert example_reference(source) == "class Model(nn.Module):\n\n    def forward(self, x):\n        return torch.abs(x)"
    assert example_reference("x = (") == "x = ("
    signature = 'struct T {\n    int64_t n;  // size (now 4)\n};\n// a comment line\nextern "C" void kernel(\n    GM_ADDR x  // input\n);'
    assert example_signature(signature) == 'struct T {\n    int64_t n;\n};\nextern "C" void kernel(\n    GM_ADDR x\n);'
