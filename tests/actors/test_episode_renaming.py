"""Whole episodes (real harness, real bank, scripted model): a kernel of another operator reaches
the prompt in the task's own terms, and the attempt's provenance says it was renamed while the
credit stays with the item shown (issue 54, point 3)."""

from __future__ import annotations

import json
import shutil

from memory_actor.bank import MemoryBank
from npu_pool.tasks.spec import load_task
from tests.actors import replies
from tests.actors.conftest import RELU
from tests.actors.episode_support import run_episode
from tests.actors.openai_server import ScriptedAgent
from tests.actors.test_renaming import LOG1P_ABS_VALUES

RENAMED = {"x": "values", "x_d0": "values_d0", "x_d1": "values_d1"}
VALUES_REPLY = """```cpp
#include <cstdint>
extern "C" void kernel(const float* values, float* out, int64_t values_d0, int64_t values_d1, int64_t out_d0,
                       int64_t out_d1) {
    for (int64_t i = 0; i < values_d0 * values_d1; ++i) out[i] = values[i];
}
```"""


def suite(tmp_path):
    """4_ReLU and a task whose input is called `values`, side by side (a worked example's
    reference is read from beside the task)."""
    shutil.copy(RELU, tmp_path / RELU.name)
    (tmp_path / "t1_Log1pAbsValues.py").write_text(LOG1P_ABS_VALUES)
    return load_task(tmp_path / RELU.name), load_task(tmp_path / "t1_Log1pAbsValues.py")


def draft_body(server, agent):
    [body] = [r["body"] for r in server.chat_requests if agent.kind_of(r["body"]) == "draft"]
    return body


def test_the_family_example_and_a_banked_kernel_are_shown_in_the_tasks_names(
        llm_server, harness_config, memory_config, tmp_path):
    from memory_actor.seeding import seed_items

    relu_task, values_task = suite(tmp_path)
    config = memory_config.model_copy(update={"items_per_prompt": 2, "retrieval": "similarity"})
    bank = MemoryBank(config)
    bank.add(seed_items("cpu", set()))
    [example_id] = bank.api.lookup("cpu", ["example_elementwise"])
    llm = {"exemplar_as_example": True}

    # the first draft of the family: its verified example, renamed from x to values
    agent = ScriptedAgent([VALUES_REPLY])
    llm_server.responder = agent
    lines: list[str] = []
    _, [first], bank = run_episode(llm_server, values_task, harness_config, config, iterations=1, llm_overrides=llm,
                                   lessons=False, bank=bank, on_attempt=lambda a: lines.append(a.model_dump_json()))
    _, example_user, example_assistant, user = draft_body(llm_server, agent)["messages"]
    assert example_user["content"].startswith("## Task ex1_Log1pAbs")
    assert "const float* values" in example_user["content"]  # its code's signature: the task's
    assert "const float* values" in example_assistant["content"] and "std::log1p" in example_assistant["content"]
    assert "x_d0" not in example_assistant["content"]
    [shown] = [s for s in first.shown if s.id == example_id]
    assert (shown.role, shown.renamed) == ("example", RENAMED)
    assert bank.get(example_id).visits_draft == 1 and "const float* x" in bank.get(example_id).content
    record = json.loads(lines[0])
    assert [r["renamed"] for r in record["shown"] if r["id"] == example_id] == [RENAMED]

    # ReLU's working kernel is banked; the next draft of the values task is shown it, renamed
    llm_server.responder = ScriptedAgent([replies.FAST])
    _, [relu], bank = run_episode(llm_server, relu_task, harness_config, config, iterations=1, llm_overrides=llm,
                                  lessons=False, bank=bank)
    assert relu.feasible
    since = len(llm_server.chat_requests)
    agent = ScriptedAgent([VALUES_REPLY.replace("out[i] = values[i]", "out[i] = -values[i]")])
    llm_server.responder = agent
    _, [second], bank = run_episode(llm_server, values_task, harness_config, config, iterations=1, llm_overrides=llm,
                                    lessons=False, bank=bank)
    [body] = [r["body"] for r in llm_server.chat_requests[since:] if agent.kind_of(r["body"]) == "draft"]
    _, example_user, example_assistant, _ = body["messages"]
    assert example_user["content"].startswith("## Task 4_ReLU") and "torch.relu(x)" in example_user["content"]
    assert "out[i] = values[i] > 0.f ? values[i] : 0.f" in example_assistant["content"]
    assert "const int64_t n = values_d0 * values_d1" in example_assistant["content"]
    roles = {s.id: (s.role, s.renamed) for s in second.shown}
    assert roles[relu.attempt_id] == ("example", RENAMED)
    assert bank.get(relu.attempt_id).visits_draft == 1  # credited as the item it is
