"""Whole episodes with memory content, single-process: what another operator's record may show
(its fix and its kernel, never its failures), credit to exactly what the prompt showed, and the
slot's choice between the family example, a kernel of the family and the generic example."""

from __future__ import annotations

import json

from memory_actor.bank import MemoryBank
from memory_actor.items import MemoryItem
from tests.actors import replies
from tests.actors.episode_support import run_episode
from tests.actors.openai_server import ScriptedAgent


def drafts(server, agent, since: int = 0):
    return [r["body"] for r in server.chat_requests[since:] if agent.kind_of(r["body"]) == "draft"]


def draft_once(server, task, harness_config, memory_config, reply, bank, llm):
    """One scripted one-draft episode over `bank`; returns its attempt and the draft request's body."""
    agent = ScriptedAgent([reply])
    server.responder = agent
    since = len(server.chat_requests)
    _, [attempt], _ = run_episode(server, task, harness_config, memory_config, iterations=1,
                                  llm_overrides=llm, lessons=False, bank=bank)
    [body] = drafts(server, agent, since)
    return attempt, body


def test_another_operators_failures_never_arrive_but_its_fix_and_its_kernel_as_the_example(
        llm_server, relu_task, sigmoid_task, harness_config, memory_config):
    """A local-model run (no model lessons): ReLU fails once, then works; Sigmoid's drafts never
    show ReLU's failure record, only what changed to pass (a removed line marked `-`), and
    (exemplar_as_example) see ReLU's working kernel as the worked example: ReLU's own task, then
    its code (similarity retrieval: the nearest kernel of the family takes the slot)."""
    memory_config = memory_config.model_copy(update={"retrieval": "similarity"})
    llm = {"exemplar_as_example": True}
    agent = ScriptedAgent([replies.BROKEN, replies.FAST])
    llm_server.responder = agent
    _, relu_attempts, bank = run_episode(llm_server, relu_task, harness_config, memory_config, iterations=2,
                                         llm_overrides=llm, lessons=False)
    broken, fast = relu_attempts
    assert agent.kinds == ["draft", "draft"]  # no model lesson ...
    assert "First error: line 2: error:" in bank.get(broken.lesson_id).content  # ... but a lesson all the same

    attempt, body = draft_once(llm_server, sigmoid_task, harness_config, memory_config, replies.WRONG, bank, llm)
    everything = "\n".join(m["content"] for m in body["messages"])
    kept = "\n".join(line for line in everything.splitlines() if not line.startswith(("- ", "+ ")))  # a fix lesson's diff
    assert "out[i] = y[i]" not in kept, [line for line in kept.splitlines() if "out[i] = y[i]" in line]
    assert "4_ReLU draft attempt failed" not in everything  # the failure record is never shown
    system, example_user, example_assistant, user = body["messages"]
    assert example_user["content"].startswith("## Task 4_ReLU") and "torch.relu(x)" in example_user["content"]
    assert "#pragma omp parallel for simd" in example_assistant["content"] and "0_ScaledAdd" not in everything
    assert kept.count("#pragma omp parallel for simd") == 1  # the kernel once (its fix lesson's lines aside)
    assert "## Task 7_Sigmoid" in user["content"]
    roles = {s.id: s.role for s in attempt.shown}
    assert roles[fast.attempt_id] == "example" and roles[fast.lesson_id] == "context"
    assert broken.attempt_id not in roles and broken.lesson_id not in roles
    # Sigmoid's own failure taught the bank the precise mismatch, for the next attempt.
    assert "max abs diff" in bank.get(attempt.lesson_id).content


def test_credit_goes_to_exactly_what_the_prompt_showed(llm_server, relu_task, harness_config, memory_config):
    memory_config = memory_config.model_copy(update={"retrieval": "similarity"})  # always shows its ranked items
    bank = MemoryBank(memory_config)
    lessons = [MemoryItem(kind="experience", backend="cpu", task_id=f"{n}_Other", content=f"lesson {n}: " + "w" * 1500,
                          summary=f"lesson {n} about ReLU kernels", stage="draft",
                          tags=["lesson:fix", "family:elementwise"]) for n in range(6)]
    bank.add(lessons)
    agent = ScriptedAgent([replies.WRONG])
    llm_server.responder = agent
    lines = []
    _, [attempt], bank = run_episode(llm_server, relu_task, harness_config, memory_config, iterations=1,
                                     lessons=False, llm_overrides={"prompt_char_budget": 7000}, bank=bank,
                                     on_attempt=lambda a: lines.append(a.model_dump_json()))
    [body] = drafts(llm_server, agent)
    prompt = "\n".join(m["content"] for m in body["messages"])
    shown = {s.id for s in attempt.shown}
    retrieved = set(attempt.retrieved_item_ids)
    assert shown & retrieved and retrieved - shown  # the budget cut some retrieved lessons
    for item in lessons:
        assert (item.content in prompt) == (item.id in shown)
        assert bank.get(item.id).visits_draft == (1 if item.id in shown else 0)
    # Provenance, as attempts.jsonl records it: id, kind, task and Q when shown.
    record = json.loads(lines[0])
    assert {r["id"] for r in record["shown"]} == shown
    assert all({"id", "kind", "task", "q", "role"} <= set(r) for r in record["shown"])
    assert {r["q"] for r in record["shown"] if r["kind"] == "experience"} == {0.0}


def test_the_slot_shows_the_family_example_then_a_kernel_of_the_family_and_credits_them(
        llm_server, relu_task, sigmoid_task, harness_config, memory_config):
    """Similarity retrieval over the seeded bundle, two ranked slots full of practices: ReLU's
    first draft gets the elementwise family's verified example as its worked example (no kernel
    of its family yet): the example's own task, then its kernel; Sigmoid's draft then gets ReLU's
    working kernel. Both are credited like any shown item, and the decision's statistics count
    each draft under its option."""
    from memory_actor.seeding import seed_items

    config = memory_config.model_copy(update={"items_per_prompt": 2, "retrieval": "similarity"})
    bank = MemoryBank(config)
    bank.add(seed_items("cpu", set()))
    [example_id] = bank.api.lookup("cpu", ["example_elementwise"])
    llm = {"exemplar_as_example": True}
    agent = ScriptedAgent([replies.FAST])
    llm_server.responder = agent
    _, [relu], bank = run_episode(llm_server, relu_task, harness_config, config, iterations=1,
                                  llm_overrides=llm, lessons=False, bank=bank)
    [body] = drafts(llm_server, agent)
    user = body["messages"][-1]["content"]
    example_user, example_assistant = body["messages"][1:3]
    assert relu.feasible and example_user["content"].startswith("## Task ex1_Log1pAbs")
    assert "torch.log1p(torch.abs(x))" in example_user["content"] and "std::log1p" in example_assistant["content"]
    assert "0_ScaledAdd" not in user and "[practice]" in user[user.index("## From memory"):]
    roles = {s.id: s.role for s in relu.shown}
    assert roles[example_id] == "example" and bank.get(example_id).visits_draft == 1
    core = [s.id for s in relu.shown if "core" in bank.get(s.id).tags]
    assert core and all(bank.get(i).visits_draft == 0 for i in core)  # the static brief is not credited
    named = [s.id for s in relu.shown if s.role == "api" and s.id not in core]  # found by name in a shown item
    assert all(bank.get(i).visits_draft == 1 for i in named)

    attempt, body = draft_once(llm_server, sigmoid_task, harness_config, config, replies.WRONG, bank, llm)
    _, example_user, example_assistant, user = body["messages"]
    assert example_user["content"].startswith("## Task 4_ReLU")
    assert "#pragma omp parallel for simd" in example_assistant["content"]
    assert "std::log1p" not in user["content"]
    roles = {s.id: s.role for s in attempt.shown}
    assert roles[relu.attempt_id] == "example" and bank.get(relu.attempt_id).visits_draft == 1
    slots = bank.stats(disk=False).slots
    assert slots["cpu/elementwise/fresh/example+ranked"] == [1, 1]
    assert slots["cpu/elementwise/fresh/kernels+ranked"] == [0, 1]
    assert slots[f"cpu/elementwise/fresh/{relu.attempt_id}"] == [0, 1]
    assert slots["cpu/elementwise/fresh/all"] == [1, 2]


def test_value_retrieval_keeps_the_generic_example_where_kernels_did_worse(
        llm_server, relu_task, sigmoid_task, harness_config, memory_config):
    """Value retrieval: once the family's fresh drafts did far better with the generic example
    than with banked kernels, Sigmoid's draft gets the generic example, although ReLU's kernel
    is a candidate (similarity would show it). Learned from outcomes, not a floor on Q."""
    from memory_actor.messages import ValueUpdate
    from memory_actor.slots import SlotOutcome

    assert memory_config.retrieval == "value"
    llm = {"exemplar_as_example": True}
    llm_server.responder = ScriptedAgent([replies.FAST])
    _, [relu], bank = run_episode(llm_server, relu_task, harness_config, memory_config, iterations=1,
                                  llm_overrides=llm, lessons=False)
    assert relu.feasible
    for kind, key, reward in (("generic", "generic", 1.0), ("kernel", relu.attempt_id, -1.0)):
        outcome = SlotOutcome(backend="cpu", family="elementwise", context="fresh", key=key, kind=kind)
        for _ in range(12):
            bank.update(ValueUpdate(shown_ids=[], stage="draft", reward=reward, slot=outcome))

    attempt, body = draft_once(llm_server, sigmoid_task, harness_config, memory_config, replies.WRONG, bank, llm)
    assert "0_ScaledAdd" in body["messages"][1]["content"]
    assert {s.id: s.role for s in attempt.shown}.get(relu.attempt_id) != "example"
    assert bank.stats(disk=False).slots["cpu/elementwise/fresh/bare"] == [13, 14]  # ReLU's draft, 12, Sigmoid's
