"""Prompts: templates from package data, the format choice, and explicit truncation."""

from __future__ import annotations

import structlog

from actors.config import LLMConfig
from actors.messages import (
    ContextItem,
    DraftRequest,
    Feedback,
    RefineRequest,
    StartPoint,
    TaskBrief,
)
from actors.prompting import PromptBuilder, resolve_candidate_format

SIGNATURE = 'extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t out_d0);'
TASK = TaskBrief(task_id="19_ReLU", backend="cpu", reference_source="class Model(nn.Module):\n    pass\n",
                 sizes={"batch_size": 16, "dim": 1024}, signature=SIGNATURE)


def test_format_is_chosen_per_model():
    assert resolve_candidate_format(LLMConfig()) == "kernel"  # the local default
    assert resolve_candidate_format(LLMConfig(model="Qwen2.5-Coder-7B-Instruct")) == "kernel"
    assert resolve_candidate_format(LLMConfig(model="deepseek-coder-1.5b")) == "kernel"
    assert resolve_candidate_format(LLMConfig(model="gpt-4o")) == "modelnew"
    assert resolve_candidate_format(LLMConfig(model="gpt-4o", candidate_format="kernel")) == "kernel"


def test_draft_prompt_layout_for_small_models():
    messages, truncated = PromptBuilder(LLMConfig(), "kernel").draft(
        DraftRequest(task=TASK, context=[ContextItem(id="a", kind="experience", summary="use OpenMP", content="...")],
                     previous=Feedback(gate="compile", reason="error: 'y' was not declared", code="void kernel() {}")))
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]  # one-shot example turn
    user = messages[-1]["content"]
    assert SIGNATURE in user and "batch_size=16, dim=1024" in user
    assert "[experience] use OpenMP" in user and "failed at the compile gate" in user
    assert "g++" in messages[0]["content"] and not truncated
    no_example, _ = PromptBuilder(LLMConfig(one_shot_example=False), "kernel").draft(DraftRequest(task=TASK))
    assert [m["role"] for m in no_example] == ["system", "user"]


def test_plain_style_swaps_the_kernel_system_prompt_only():
    full, _ = PromptBuilder(LLMConfig(), "kernel").draft(DraftRequest(task=TASK))
    plain, _ = PromptBuilder(LLMConfig(prompt_style="plain"), "kernel").draft(DraftRequest(task=TASK))
    assert "plain for-loops" in plain[0]["content"] and "plain for-loops" not in full[0]["content"]
    assert "auto-vectorisation" in full[0]["content"] and "auto-vectorisation" not in plain[0]["content"]
    assert plain[1:] == full[1:]  # the example and the task are the same
    modelnew, _ = PromptBuilder(LLMConfig(prompt_style="plain"), "modelnew").draft(DraftRequest(task=TASK))
    assert "class ModelNew" in modelnew[0]["content"]  # no plain variant: the full prompt


def test_modelnew_prompts_ask_for_a_python_file():
    builder = PromptBuilder(LLMConfig(model="gpt-4o"), "modelnew")
    messages, _ = builder.draft(DraftRequest(task=TASK))
    assert "class ModelNew" in messages[0]["content"] and "```python" in messages[2]["content"]
    assert SIGNATURE not in messages[-1]["content"]


def test_over_budget_prompts_are_cut_with_a_marker_and_a_log_event():
    huge = ContextItem(id="t", kind="trace", summary="old kernel", content="x = 1;\n" * 5000)
    start = StartPoint(id="s", code='extern "C" void kernel() {}', latency_ms=2.0, speedup_vs_eager=1.5,
                       profile="bound: memory")
    builder = PromptBuilder(LLMConfig(prompt_char_budget=6000), "kernel")
    with structlog.testing.capture_logs() as logs:
        messages, truncated = builder.refine(RefineRequest(task=TASK, start=start, best_latency_ms=2.0,
                                                           context=[huge], children=[huge]))
    total = sum(len(m["content"]) for m in messages)
    assert truncated and total <= 6000 + 400  # markers add a little
    user = messages[-1]["content"]
    assert "cut to fit the prompt budget" in user
    assert start.code in user and SIGNATURE in user  # fixed parts are never cut
    assert any(e["event"] == "prompt_truncated" for e in logs)
