"""Static first (issue 42): every prompt runs from the most shared part to the least, so two
drafts of different operators share the same bytes up to the task, and the server reads that
prefix once; code answers stop at their block's closing fence."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.briefing import task_brief
from actors.config import LLMConfig
from actors.llm_client import CODE_STOP, close_stopped_fence
from actors.messages import ContextItem, DraftRequest, Exemplar, Feedback, RefineRequest, StartPoint
from actors.prompting import PromptBuilder
from memory_actor.seeding import bundle_items
from npu_pool.backends import get_backend
from npu_pool.tasks.spec import load_task

SUITE = Path(__file__).resolve().parents[2] / "suites" / "cpu" / "level1"
LOCAL_MODEL = dict(prompt_char_budget=8000, prompt_style="plain", small_model=True, candidate_format="kernel",
                   exemplar_as_example=True)


def chatml(messages: list[dict[str, str]]) -> str:
    """The bytes llama.cpp's chatml template makes of the messages (what its KV cache keys on)."""
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)


def request(task: str, backend: str, memory: bool = False) -> DraftRequest:
    core = [ContextItem(id=i.id, kind=i.kind, summary=i.summary, content=i.content, core=True)
            for i in bundle_items(backend) if "core" in i.tags]
    brief = task_brief(load_task(SUITE / f"{task}.py"), get_backend(backend), "kernel")
    if not memory:
        return DraftRequest(task=brief, api=core)
    return DraftRequest(task=brief, api=core,
                        context=[ContextItem(id="k1", kind="trace", summary="a correct kernel [feasible]",
                                             content='extern "C" void kernel(float* x) { x[0] = 1.0f; }')],
                        previous=Feedback(gate="correctness", reason="output 0 differs from the reference"))


def shared(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@pytest.mark.parametrize("backend", ["cpu", "npu-twin"])
def test_sections_run_from_the_most_shared_to_the_least(backend):
    messages = PromptBuilder(LLMConfig(**LOCAL_MODEL), "kernel").draft(request("5_GELU", backend, memory=True)).messages
    system, example_user, _, user = (m["content"] for m in messages)
    assert system.index("## Backend notes") < system.index("## Backend API")  # instructions first, then both
    assert not system.startswith("##") and "5_GELU" not in system and "5_GELU" not in example_user
    order = [user.index(heading) for heading in ("## Task 5_GELU", "## What to write", "## From memory",
                                                 "## Your previous attempt")]
    assert order == sorted(order) and order[0] == 0
    assert "## Backend notes" not in user
    assert "code only" in user  # ask for code, nothing after it


@pytest.mark.parametrize("backend", ["cpu", "npu-twin"])
def test_two_operators_share_every_byte_up_to_the_task(backend):
    builder = PromptBuilder(LLMConfig(**LOCAL_MODEL), "kernel")
    gelu, softmax = (chatml(builder.draft(request(t, backend)).messages) for t in ("5_GELU", "18_Softmax"))
    task_starts = gelu.index("## Task 5_GELU")
    assert task_starts == softmax.index("## Task 18_Softmax")
    assert shared(gelu, softmax) >= task_starts + len("## Task ")
    # and the static part is most of the prompt: the system turn, notes, API brief and example
    assert task_starts > len(gelu) / 2
    # with memory the same task's drafts share up to the memory section
    cold, warm = (chatml(builder.draft(request("5_GELU", backend, memory)).messages) for memory in (False, True))
    assert shared(cold, warm) >= cold.index("## From memory")


def test_an_exemplar_as_the_example_keeps_the_static_part_before_it():
    builder = PromptBuilder(LLMConfig(**LOCAL_MODEL), "kernel")
    plain = builder.draft(request("5_GELU", "cpu")).messages
    exemplar = Exemplar(item_id="e", task=request("7_Sigmoid", "cpu").task, code='extern "C" void kernel() {}')
    with_exemplar = builder.draft(request("5_GELU", "cpu").model_copy(update={"exemplar": exemplar})).messages
    assert with_exemplar[0] == plain[0]  # the system turn, notes and API brief included, is the same bytes
    assert "## Task 7_Sigmoid" in with_exemplar[1]["content"]


def test_refine_prompts_put_the_backend_notes_in_the_system_turn():
    builder = PromptBuilder(LLMConfig(**LOCAL_MODEL), "kernel")
    brief = request("5_GELU", "cpu").task
    refine = builder.refine(RefineRequest(task=brief, start=StartPoint(id="s", code="void kernel() {}", latency_ms=1.0),
                                          best_latency_ms=1.0)).messages
    draft = builder.draft(DraftRequest(task=brief)).messages
    assert refine[0] == draft[0] and "## Backend notes" in refine[0]["content"]
    assert "## Backend notes" not in refine[-1]["content"]


def test_a_reply_stopped_at_the_closing_fence_gets_its_fence_back():
    assert CODE_STOP == ["\n```\n"] and not "```cpp\n".startswith(CODE_STOP[0])
    stopped = "```cpp\nextern \"C\" void kernel() {}"
    assert close_stopped_fence(stopped, "stop") == stopped + "\n```"
    assert close_stopped_fence(stopped, "length") == stopped  # cut at max_tokens: really unfinished
    closed = stopped + "\n```"
    assert close_stopped_fence(closed, "stop") == closed
    assert close_stopped_fence("no code at all", "stop") == "no code at all"
