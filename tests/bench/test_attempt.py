"""bench/attempt.py and bench/attempt_record.py: the recording proxy against a real HTTP
OpenAI server on loopback, and the arithmetic the replay reports rest on."""

from __future__ import annotations

import json

import openai

from bench.attempt import chatml, config_for, shared_prefix, summarise
from bench.attempt_record import RecordingProxy, task_of
from tests.actors.openai_server import OpenAITestServer

REPLY = "```cpp\nextern \"C\" void kernel(const float* x, float* out, int64_t n) { }\n```"


def test_the_proxy_forwards_and_records_each_chat_request(tmp_path):
    out = tmp_path / "prompts.jsonl"
    messages = [{"role": "system", "content": "be brief"},
                {"role": "user", "content": "## Task 19_ReLU\nexample"}, {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "## Task 4_ReLU\nThe reference..."}]
    with OpenAITestServer() as server:
        server.script(REPLY, REPLY)
        with RecordingProxy(server.base_url, out).serving() as proxied:
            client = openai.OpenAI(base_url=proxied, api_key="x")
            reply = client.chat.completions.create(model=server.model, messages=messages, max_tokens=64, temperature=0.5)
            assert reply.choices[0].message.content == REPLY
            client.chat.completions.create(model=server.model, messages=messages[-1:])
        assert len(server.chat_requests) == 2
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2
    assert rows[0]["task"] == "4_ReLU" and rows[0]["messages"] == messages and rows[0]["reply"] == REPLY
    assert rows[0]["max_tokens"] == 64 and rows[0]["temperature"] == 0.5 and rows[0]["usage"]["prompt_tokens"] >= 0


def test_the_task_is_the_last_user_turns():
    assert task_of([{"role": "user", "content": "## Task A\n"}, {"role": "user", "content": "## Task B\nx"}]) == "B"
    assert task_of([{"role": "user", "content": "no heading"}]) is None


def test_configurations_name_one_lever_each():
    baseline, tuned = config_for("baseline"), config_for("tuned")
    assert baseline.logits_all and not baseline.prompt_cache_mb and not baseline.prompt_lookup_tokens
    assert config_for("baseline+logits").logits_all is False
    assert config_for("baseline+cache").prompt_cache_mb > 0 and config_for("baseline+cache").logits_all
    assert config_for("baseline+threads2").n_threads == 2
    assert config_for("tuned-logits").logits_all and config_for("tuned-logits").prompt_lookup_tokens == tuned.prompt_lookup_tokens


def test_prefix_and_summary_arithmetic():
    assert shared_prefix([1, 2, 3], [1, 2, 4, 5]) == 2 and shared_prefix([], [1]) == 0
    text = chatml([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
    assert text == "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n"
    rows = [{"prompt_tokens_new": 100, "prompt_s": 2.0, "streamed_tokens": 10, "generation_s": 5.0, "llm_s": 7.0,
             "attempt_s": 8.0, "evaluation_s": 1.0, "feasible": True},
            {"prompt_tokens_new": 300, "prompt_s": 2.0, "streamed_tokens": 30, "generation_s": 5.0, "llm_s": 7.0,
             "attempt_s": 9.0, "evaluation_s": 2.0, "feasible": False}]
    summary = summarise(rows)
    assert summary["prompt_tokens_per_s"] == 100.0 and summary["generation_tokens_per_s"] == 4.0
    assert summary["attempt_s_median"] == 8.5 and summary["feasible"] == 1 and summary["judged"] == 2
