"""Prompts: templates from package data, the format choice, and explicit truncation."""

from __future__ import annotations

import structlog

from actors.config import LLMConfig
from actors.messages import (
    ContextItem,
    DraftRequest,
    Exemplar,
    Feedback,
    RefineRequest,
    StartPoint,
    TaskBrief,
)
from actors.prompt_templates import resolve_candidate_format
from actors.prompting import PromptBuilder

SIGNATURE = 'extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t out_d0);'
TASK = TaskBrief(task_id="19_ReLU", backend="cpu", reference_source="class Model(nn.Module):\n    pass\n",
                 sizes={"batch_size": 16, "dim": 1024}, signature=SIGNATURE)


def test_format_is_chosen_by_the_small_model_setting_not_the_name():
    assert resolve_candidate_format(LLMConfig(small_model=True)) == "kernel"  # what the local model's settings set
    assert resolve_candidate_format(LLMConfig(model="deepseek-coder-1.5b", small_model=True)) == "kernel"
    # A large Qwen behind an API is not a small model because its name says "qwen".
    assert resolve_candidate_format(LLMConfig(model="Qwen2.5-72B-Instruct")) == "modelnew"
    assert resolve_candidate_format(LLMConfig(model="gpt-4o")) == "modelnew"
    assert resolve_candidate_format(LLMConfig(model="gpt-4o", candidate_format="kernel")) == "kernel"
    assert resolve_candidate_format(LLMConfig(small_model=True, candidate_format="modelnew")) == "modelnew"


def test_draft_prompt_layout_for_small_models():
    prompt = PromptBuilder(LLMConfig(), "kernel").draft(
        DraftRequest(task=TASK, context=[ContextItem(id="a", kind="experience", summary="use OpenMP", content="...")],
                     previous=Feedback(gate="compile", reason="error: 'y' was not declared", code="void kernel() {}")))
    messages, truncated = prompt.messages, prompt.truncated
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]  # one-shot example turn
    user = messages[-1]["content"]
    assert SIGNATURE in user and "batch_size=16, dim=1024" in user
    assert "[experience] use OpenMP" in user and "failed at the compile gate" in user
    assert "g++" in messages[0]["content"] and not truncated and prompt.shown_ids == ["a"]
    no_example = PromptBuilder(LLMConfig(one_shot_example=False), "kernel").draft(DraftRequest(task=TASK)).messages
    assert [m["role"] for m in no_example] == ["system", "user"]


def test_kernel_prompts_end_with_the_signature_on_one_line():
    commented = ('extern "C" void kernel(\n    const float* x,  // input, float32 [x_d0] (now 16)\n'
                 '    float* out,      // output\n    int64_t x_d0     // size of dimension 0 of x\n);')
    task = TASK.model_copy(update={"signature": commented})
    one_line = 'extern "C" void kernel(const float* x, float* out, int64_t x_d0)'
    builder = PromptBuilder(LLMConfig(), "kernel")
    draft = builder.draft(DraftRequest(task=task)).messages[-1]["content"]
    assert draft.rstrip().endswith(f"`{one_line}`")
    refine = builder.refine(RefineRequest(task=task, start=StartPoint(id="s", code="void kernel() {}",
                                                                      latency_ms=2.0),
                                          best_latency_ms=2.0)).messages[-1]["content"]
    assert refine.rstrip().endswith(f"`{one_line}`")
    modelnew = PromptBuilder(LLMConfig(), "modelnew").draft(DraftRequest(task=task)).messages[-1]["content"]
    assert "Start the kernel with exactly this line" not in modelnew


def test_ascendc_signature_reminder_names_the_entry_only():
    # The Ascend C signature shows the KernelTiling struct the prelude defines; the reminder
    # repeats only the entry, so it does not invite a second definition of the struct.
    # Shown as a declaration (a bank's older items) or as the definition to fill (the backends' own
    # rendering since 2026-12-07, npu_pool/backends/ascendc.py): the same entry line.
    struct = 'struct KernelTiling {\n    int64_t n;  // elements\n    uint32_t block_dim;\n};\n'
    for entry in ('extern "C" __global__ __aicore__ void kernel(\n    GM_ADDR x,  // input\n    GM_ADDR tiling\n);',
                  'extern "C" __global__ __aicore__ void kernel(\n    GM_ADDR x,  // input\n    GM_ADDR tiling)  // tiling\n'
                  "{\n    // the kernel's body\n}"):
        task = TASK.model_copy(update={"signature": struct + entry})
        draft = PromptBuilder(LLMConfig(), "kernel").draft(DraftRequest(task=task)).messages[-1]["content"]
        reminder = draft.rstrip().rsplit("Start the kernel with exactly this line", 1)[1]
        assert reminder.endswith('`extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR tiling)`')
        assert "struct KernelTiling" not in reminder


def test_plain_style_swaps_the_kernel_system_prompt_only():
    full = PromptBuilder(LLMConfig(), "kernel").draft(DraftRequest(task=TASK)).messages
    plain = PromptBuilder(LLMConfig(prompt_style="plain"), "kernel").draft(DraftRequest(task=TASK)).messages
    assert "plain for-loops" in plain[0]["content"] and "plain for-loops" not in full[0]["content"]
    assert "auto-vectorisation" in full[0]["content"] and "auto-vectorisation" not in plain[0]["content"]
    assert plain[1:] == full[1:]  # the example and the task are the same
    modelnew = PromptBuilder(LLMConfig(prompt_style="plain"), "modelnew").draft(DraftRequest(task=TASK)).messages
    assert "class ModelNew" in modelnew[0]["content"]  # no plain variant: the full prompt


def test_modelnew_prompts_ask_for_a_python_file():
    builder = PromptBuilder(LLMConfig(model="gpt-4o"), "modelnew")
    messages = builder.draft(DraftRequest(task=TASK)).messages
    assert "class ModelNew" in messages[0]["content"] and "```python" in messages[2]["content"]
    assert SIGNATURE not in messages[-1]["content"]


def test_over_budget_prompts_are_cut_with_a_marker_and_a_log_event():
    huge = ContextItem(id="t", kind="trace", summary="old kernel", content="x = 1;\n" * 5000)
    start = StartPoint(id="s", code='extern "C" void kernel() {}', latency_ms=2.0, speedup_vs_eager=1.5,
                       profile="bound: memory")
    builder = PromptBuilder(LLMConfig(prompt_char_budget=6000), "kernel")
    with structlog.testing.capture_logs() as logs:
        prompt = builder.refine(RefineRequest(task=TASK, start=start, best_latency_ms=2.0, context=[huge],
                                              children=[huge.model_copy(update={"id": "c"})]))
    messages, truncated = prompt.messages, prompt.truncated
    total = sum(len(m["content"]) for m in messages)
    assert truncated and total <= 6000 + 400  # markers add a little
    user = messages[-1]["content"]
    assert "cut to fit the prompt budget" in user
    assert start.code in user and SIGNATURE in user  # fixed parts are never cut
    assert any(e["event"] == "prompt_truncated" for e in logs)
    # Items are dropped whole: the huge one is not in the prompt, so it is not credited.
    assert "x = 1;" not in user and prompt.shown_ids == []


EXEMPLAR_SIGNATURE = 'extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1);'
EXEMPLAR_CODE = ('extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1) {\n'
                 '    for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = 1.f / (1.f + expf(-x[i]));\n}')
EXEMPLAR = Exemplar(item_id="ex", code=EXEMPLAR_CODE, task=TaskBrief(
    task_id="7_Sigmoid", backend="cpu", reference_source="class Model(nn.Module):\n    def forward(self, x):\n"
    "        return torch.sigmoid(x)\n", sizes={"batch_size": 8, "dim": 64}, signature=EXEMPLAR_SIGNATURE))
EXEMPLAR_ITEM = ContextItem(id="ex", kind="trace", summary="7_Sigmoid draft: feasible", content=EXEMPLAR_CODE,
                            task="7_Sigmoid")
CORE_API = ContextItem(id="api-core", kind="api", summary="the kernel ABI", content="kernel ABI: " + "a" * 300,
                       core=True)
LESSON = ContextItem(id="lesson", kind="experience", summary="why it failed", content="line 3: error: 'y' undeclared")


def whole_prompt(prompt) -> str:
    return "\n".join(m["content"] for m in prompt.messages)


def test_a_small_model_gets_the_exemplar_as_its_worked_example():
    request = DraftRequest(task=TASK, context=[EXEMPLAR_ITEM, LESSON], exemplar=EXEMPLAR)
    prompt = PromptBuilder(LLMConfig(exemplar_as_example=True), "kernel").draft(request)
    system, user_example, assistant_example, user = prompt.messages
    # The example turns are that operator's own task, built like this one's, and its code.
    assert user_example["content"].startswith("## Task 7_Sigmoid") and EXEMPLAR_SIGNATURE in user_example["content"]
    assert "torch.sigmoid" in user_example["content"] and "batch_size=8, dim=64" in user_example["content"]
    assert assistant_example["content"] == f"```cpp\n{EXEMPLAR_CODE}\n```"
    assert "0_ScaledAdd" not in whole_prompt(prompt)  # it replaces the generic example
    assert whole_prompt(prompt).count("expf(-x[i])") == 1  # not repeated as context
    assert prompt.example_id == "ex" and prompt.shown_ids == ["ex", "lesson"]
    # Other models keep the generic example; the exemplar is a (fenced) context item.
    generic = PromptBuilder(LLMConfig(), "kernel").draft(request)
    assert generic.messages[1]["content"].startswith("## Task 0_ScaledAdd") and generic.example_id is None
    assert f"```cpp\n{EXEMPLAR_CODE}\n```" in generic.messages[-1]["content"]
    assert generic.shown_ids == ["ex", "lesson"]


def test_the_example_and_core_api_items_survive_truncation_and_credit_follows():
    many = [ContextItem(id=f"t{i}", kind="experience", summary=f"lesson {i}", content=f"lesson {i}: " + "z" * 900)
            for i in range(12)]
    request = DraftRequest(task=TASK, context=many, api=[CORE_API], exemplar=EXEMPLAR,
                           previous=Feedback(gate="correctness", reason="output 0 differs", code="int y = 0;"))
    for config in (LLMConfig(prompt_char_budget=6000), LLMConfig(prompt_char_budget=6000, exemplar_as_example=True)):
        prompt = PromptBuilder(config, "kernel").draft(request)
        text = whole_prompt(prompt)
        assert prompt.truncated and [m["role"] for m in prompt.messages] == ["system", "user", "assistant", "user"]
        assert CORE_API.content in prompt.messages[0]["content"]  # the static brief, in the system turn
        shown = [item.id for item in many if item.content in text]
        assert 0 < len(shown) < len(many) and shown == [f"t{i}" for i in range(len(shown))]  # best-ranked first
        assert prompt.shown_ids == ["api-core", *([prompt.example_id] if prompt.example_id else []), *shown]
        assert "more item(s) of context cut to fit the prompt budget" in text


def test_no_code_twice_and_a_copied_example_is_named_not_repeated():
    twin = ContextItem(id="twin", kind="trace", summary="6_SiLU draft: feasible", content="int y = 0;\n")
    request = DraftRequest(task=TASK, context=[twin, LESSON],
                           previous=Feedback(gate="correctness", reason="differs", code="int  y = 0;"))
    prompt = PromptBuilder(LLMConfig(), "kernel").draft(request)
    assert whole_prompt(prompt).count("y = 0;") == 1 and prompt.shown_ids == ["lesson"]
    # The model copied the worked example and failed: the prompt says so instead of printing it again.
    copied = DraftRequest(task=TASK, exemplar=EXEMPLAR, context=[EXEMPLAR_ITEM],
                          previous=Feedback(gate="correctness", reason="differs", code=EXEMPLAR_CODE))
    prompt = PromptBuilder(LLMConfig(exemplar_as_example=True), "kernel").draft(copied)
    assert whole_prompt(prompt).count("expf(-x[i])") == 1
    assert "the worked example's code, unchanged" in prompt.messages[-1]["content"]


def test_refine_shows_a_failed_child_fenced_and_marked_and_each_code_once():
    start = StartPoint(id="s", code="int start = 1;", latency_ms=2.0, profile="bound: memory")
    failed = ContextItem(id="c1", kind="trace", summary="19_ReLU refine: compile", content="int broken = 2;",
                         failed=True, reason="line 1: error: 'q' was not declared")
    faster = ContextItem(id="c2", kind="trace", summary="19_ReLU refine: feasible, 1.5 ms", content="int fast = 3;")
    same_as_start = ContextItem(id="c3", kind="trace", summary="19_ReLU refine: feasible", content="int start = 1;")
    retrieved_twin = ContextItem(id="r1", kind="trace", summary="7_Sigmoid draft: feasible", content="int fast = 3;")
    prompt = PromptBuilder(LLMConfig(), "kernel").refine(RefineRequest(
        task=TASK, start=start, best_latency_ms=2.0, context=[retrieved_twin, LESSON],
        children=[failed, faster, same_as_start]))
    user = prompt.messages[-1]["content"]
    assert "### FAILED variant (do not repeat it): line 1: error: 'q' was not declared\n```cpp\nint broken = 2;\n```" in user
    assert "### Variant: 19_ReLU refine: feasible, 1.5 ms\n```cpp\nint fast = 3;\n```" in user
    assert user.count("int start = 1;") == 1 and user.count("int fast = 3;") == 1
    assert prompt.shown_ids == ["lesson", "c1", "c2"]


PINNED = ContextItem(id="tpl", kind="api", summary="example_elementwise",
                       content="// the elementwise example\n" + "for (int64_t i = 0; i < n; ++i) out[i] = f(x[i]);\n" * 20)
API_NAMED = ContextItem(id="api-expf", kind="api", summary="expf", content="expf: float exponential " + "e" * 400)


def test_the_pinned_family_example_comes_before_the_ranked_items_and_survives_the_budget():
    """The budget cuts ranked items (and the API items named in them) first, never the pinned example
    the slot chose, nor the core API items or the worked example."""
    many = [ContextItem(id=f"t{i}", kind="experience", summary=f"lesson {i}", content=f"lesson {i}: " + "z" * 900)
            for i in range(8)]
    request = DraftRequest(task=TASK, context=many, api=[CORE_API, API_NAMED], pinned=PINNED,
                           previous=Feedback(gate="correctness", reason="output 0 differs", code="int y = 0;"))
    for budget in (20000, 7000, 6000):
        prompt = PromptBuilder(LLMConfig(prompt_char_budget=budget), "kernel").draft(request)
        user = prompt.messages[-1]["content"]
        assert PINNED.content.strip() in user, budget
        memory = user[user.index("## From memory"):]
        shown = [item.id for item in many if item.content in user]
        assert all(memory.index(PINNED.content.strip()) < memory.index(f"lesson {i}:") for i in range(len(shown)))
        assert prompt.shown_ids[:2] == ["api-core", "tpl"] and prompt.shown_ids[2:] == shown + (
            ["api-expf"] if API_NAMED.content in user else [])
        if budget < 20000:
            assert prompt.truncated and len(shown) < len(many)


def test_the_static_prefix_is_the_same_whatever_memory_chose():
    """System turn (instructions and core API items) first, identical in every arm; what memory
    chose (the ranked items, the pinned example, the previous attempt) comes after, in the user turn."""
    builder = PromptBuilder(LLMConfig(), "kernel")
    bare = builder.draft(DraftRequest(task=TASK, api=[CORE_API]))
    full = builder.draft(DraftRequest(task=TASK, api=[CORE_API, API_NAMED], context=[LESSON], pinned=PINNED,
                                      previous=Feedback(gate="compile", reason="error", code="int y;")))
    assert bare.messages[:3] == full.messages[:3]  # system, generic example turns: the shared prefix
    assert CORE_API.content in bare.messages[0]["content"] and API_NAMED.content not in full.messages[0]["content"]
    user = full.messages[-1]["content"]
    assert user.index("## Task") < user.index(PINNED.content.strip()) < user.index(LESSON.content) < user.index(
        "failed at the compile gate")
    shared = len(bare.messages[-1]["content"].split("## From memory")[0])
    assert user[:shared] == bare.messages[-1]["content"][:shared]  # the task's brief is static too


def test_a_pinned_example_too_long_for_the_budget_is_shortened_last_never_the_reference():
    """The last resort: the pinned example (in the generic example's place) loses its comments, then
    lines from its code's tail, with a marker inside its closed fence; the reference stays whole."""
    lines = "".join(f"out[{i}] = f(x[{i}]);  // element {i}\n" for i in range(300))
    big = PINNED.model_copy(update={"content": "// a long example\n" + lines})
    with structlog.testing.capture_logs() as logs:
        prompt = PromptBuilder(LLMConfig(prompt_char_budget=6000), "kernel").draft(
            DraftRequest(task=TASK, api=[CORE_API], pinned=big))
    user = prompt.messages[-1]["content"]
    assert TASK.reference_source.strip() in user and "tpl" in prompt.shown_ids and prompt.example_id is None
    assert len(prompt.messages) == 2 and sum(len(m["content"]) for m in prompt.messages) <= 6000
    assert "out[0] = f(x[0]);\n" in user and "// element" not in user and "a long example" not in user
    assert "(its comments are left out to fit the prompt budget)" in user
    assert "characters of the context's pinned kernel cut here to fit the prompt budget ...]\n```" in user
    assert user.count("```") % 2 == 0
    cuts = [e for e in logs if e["event"] == "prompt_truncated"]
    assert [e.get("part") for e in cuts] == ["comments", "code tail"] and all(e["item_id"] == "tpl" for e in cuts)
    assert [e["event"] for e in logs if e["event"] != "prompt_truncated"] == ["pinned_replaces_example"]


def test_the_reference_is_never_cut_the_example_is_shortened_last():
    """No pinned example: over the budget with nothing else left to cut, the worked example's code is
    shortened (marker, closed fence), not the task's reference; a reference longer than the whole
    budget is still sent whole, and the prompt's excess logged."""
    def draft(lines: int):
        task = TASK.model_copy(update={"reference_source": "class Model(nn.Module):\n" + "    # a long reference\n" * lines})
        with structlog.testing.capture_logs() as logs:
            prompt = PromptBuilder(LLMConfig(prompt_char_budget=6000), "kernel").draft(DraftRequest(task=task, api=[CORE_API]))
        assert task.reference_source.strip() in prompt.messages[-1]["content"]
        return prompt, [e["event"] for e in logs]

    room = 6000 - sum(len(m["content"]) for m in draft(0)[0].messages)
    prompt, events = draft(room // len("    # a long reference\n") + 7)  # about 160 characters too long
    example_answer = prompt.messages[2]["content"]
    assert "characters of the worked example cut here to fit the prompt budget ...]\n```" in example_answer
    assert example_answer.startswith("```cpp\n") and example_answer.count("```") == 2
    assert sum(len(m["content"]) for m in prompt.messages) <= 6000 and prompt.over_budget == 0
    assert events == ["prompt_truncated"]
    prompt, events = draft(400)
    assert prompt.over_budget > 0 and events[-1] == "prompt_over_budget"


def test_a_previous_attempt_too_long_to_show_drops_its_code_whole_never_an_open_fence():
    code = "int kernel(int n) {\n" + "    n += 1;\n" * 400 + "    return n;\n}\n"
    previous = Feedback(gate="compile", reason="'m' is not declared (kernel.cpp:3)", details="kernel.cpp:3: error", code=code)
    for budget in (60000, 6000):
        prompt = PromptBuilder(LLMConfig(prompt_char_budget=budget), "kernel").draft(
            DraftRequest(task=TASK, api=[CORE_API], previous=previous))
        user = prompt.messages[-1]["content"]
        tail = user.split("## Your previous attempt at this task")[1]
        assert "'m' is not declared (kernel.cpp:3)" in tail and TASK.reference_source.strip() in user
        assert tail.count("```") % 2 == 0, tail  # every fence it opens is closed
        if budget == 60000:
            assert code.strip() in tail
        else:
            assert "n += 1;" not in tail and "(Its code is not repeated here: cut to fit the prompt budget.)" in tail


def test_records_written_before_the_pinned_rename_still_read():
    """attempts.jsonl and recorded requests before 2026-11-29 name the pinned family example
    `template` (role and request field): they read as `pinned`, and build the same prompt."""
    from actors.messages import ShownItem

    assert ShownItem.model_validate({"id": "tpl", "kind": "api", "role": "template"}).role == "pinned"
    recorded = DraftRequest(task=TASK, api=[CORE_API], pinned=PINNED).model_dump(mode="json")
    recorded["template"] = recorded.pop("pinned")
    old = DraftRequest.model_validate(recorded)
    assert old.pinned == PINNED
    builder = PromptBuilder(LLMConfig(), "kernel")
    assert builder.draft(old).messages == builder.draft(DraftRequest(task=TASK, api=[CORE_API], pinned=PINNED)).messages
