"""An infrastructure failure is never a reward (issue 15, point 1): a whole episode, with the
real harness configured for a backend this machine cannot run (cuda without a GPU), a real
LanceDB bank and a scripted LLM server. No attempt is rewarded, stored as a failed trace,
turned into a lesson or shown to the model as its own failure."""

from __future__ import annotations

import pytest
import torch

from npu_pool.config import HarnessConfig
from tests.actors import replies
from tests.actors.conftest import llm_server, memory_config, relu_task  # noqa: F401 - fixtures
from tests.actors.episode_support import run_episode
from tests.actors.openai_server import ScriptedAgent


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is present: cuda would run")
def test_infra_verdicts_leave_memory_untouched(llm_server, relu_task, memory_config, tmp_path):  # noqa: F811
    agent = ScriptedAgent([replies.SLOW, replies.SLOW, replies.FAST])
    llm_server.responder = agent
    harness = HarnessConfig(backend="cuda", compile_baseline=False, correctness_trials=2, warmup_trials=1,
                            timed_trials=5, profile_input_sets=1, build_cache_dir=str(tmp_path / "build"))
    result, attempts, bank = run_episode(llm_server, relu_task, harness, memory_config, iterations=3)

    assert [(a.stage, a.gate, a.category) for a in attempts] == [("draft", "infra", "backend_unavailable")] * 3
    assert all(a.reward is None and a.attempt_id is None and a.lesson_id is None for a in attempts)
    assert all("cuda backend cannot run here" in a.reason for a in attempts)
    # The same code twice is judged again (the machine may be fixed), not answered as a repeat.
    assert attempts[1].gate != "repeat"
    stored = [bank.get(item_id) for item_id in bank.ids()]
    assert not [i for i in stored if i.kind == "trace" or (i.kind == "experience" and i.task_id == relu_task.task_id)]
    # The model is never told that its kernel failed because of the machine.
    drafts = [r["body"]["messages"][-1]["content"] for r in llm_server.chat_requests if agent.kind_of(r["body"]) == "draft"]
    assert len(drafts) == 3 and not any("infra" in text or "cannot run here" in text for text in drafts)
    assert not result.feasible
