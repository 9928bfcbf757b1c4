"""Issue 42's replay: the fixed set of DraftRequests as this checkout's prompts, in the order one
or two operators in flight send them; the server's own count of tokens read anew; the summary's
headline."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from bench.attempt import prompt_tokens_evaluated, requests_as_prompts
from bench.attempt_summary import main as publish

REPOSITORY = Path(__file__).resolve().parents[2]
REQUESTS = REPOSITORY / "bench" / "results" / "attempt-2026-11-28" / "requests.jsonl"


def test_the_replay_set_is_sent_in_the_order_of_operators_in_flight():
    one = requests_as_prompts(REQUESTS, 1)
    two = requests_as_prompts(REQUESTS, 2)
    assert len(one) == len(two) == 12 and {p["backend"] for p in one} == {"cpu", "npu-twin"}
    assert [(p["task"], p["memory"]) for p in one[:3]] == [("5_GELU", False), ("5_GELU", True), ("5_GELU", True)]
    assert [p["task"] for p in two[:4]] == ["5_GELU", "16_MaxOverDim", "5_GELU", "16_MaxOverDim"]
    assert all(p["stop"] == ["\n```\n"] and p["max_tokens"] == 1024 for p in one)  # as the agent sends them
    assert "## Backend notes" in one[0]["messages"][0]["content"]  # built by this checkout's PromptBuilder


class _Server:
    def __init__(self, text: str):
        self._log = tempfile.TemporaryFile()
        self._log.write(text.encode())
        self._log.flush()


def test_tokens_read_anew_come_from_the_servers_log():
    earlier = "Llama.generate: 10 prefix-match hit, remaining 5 prompt tokens to eval\n"
    server = _Server(earlier + "Llama._create_completion: cache hit\n"
                     "Llama.generate: 1900 prefix-match hit, remaining 87 prompt tokens to eval\n")
    assert prompt_tokens_evaluated(server, len(earlier), 1987) == 87
    assert prompt_tokens_evaluated(_Server("INFO: 200 OK\n"), 0, 1987) == 1987  # read from scratch
    assert prompt_tokens_evaluated(_Server("Llama.generate: full prompt already cached, skipping reset\n"), 0, 9) == 0


def test_the_summary_gives_each_figure_before_and_after_per_operators_in_flight(tmp_path):
    def row(backend, new, memory=False, **extra):
        return {"backend": backend, "prompt_tokens": 2000, "prompt_tokens_new": new, "prompt_s": new / 20,
                "generation_s": 0.0, "streamed_tokens": 1, "load1": 5.0, "memory": memory, "config": "tuned",
                "prompt_cpu_s": 1.0, "generation_cpu_s": 0.0, "attempt_s": 1.0, "llm_s": 1.0, **extra}

    for side, new in (("before", 1500), ("after", 500)):
        for n in (1, 2):
            lines = [row("cpu", new), row("npu-twin", new)]
            (tmp_path / f"{side}_prompts_in_flight_{n}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    answers = [row(b, 500, streamed_tokens=t, evaluation_s=1.0, feasible=True, finish_reason="stop")
               for b, t in (("cpu", 128), ("npu-twin", 256))]
    (tmp_path / "after_attempts_in_flight_1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in answers))
    assert publish(["--dir", str(tmp_path), "--before-commit", "a", "--after-commit", "b"]) == 0
    headline = json.loads((tmp_path / "summary.json").read_text())["headline"]
    shares = headline["new_token_share_median"]
    assert [(f["in_flight"], f["before"], f["after"]) for f in shares] == [(1, 0.75, 0.25), (2, 0.75, 0.25)]
    assert shares[0]["after_basis"].startswith("measured")
    cpu_after = headline["median_attempt_s_cpu"][0]
    assert cpu_after["in_flight"] == 1 and cpu_after["after"] == round(500 / 48 + 128 / 12.8 + 1.0, 3)
    assert [f["in_flight"] for f in headline["median_attempt_s_npu_twin"]] == [1, 2]


def test_an_idle_measurement_publishes_wall_seconds_and_times_before_at_its_own_rates(tmp_path):
    earlier, idle = tmp_path / "earlier", tmp_path / "idle"
    earlier.mkdir(), idle.mkdir()
    base = {"prompt_tokens": 2000, "load1": 0.5, "memory": False, "config": "tuned", "prompt_cpu_s": 1.0,
            "generation_cpu_s": 1.0, "finish_reason": "stop", "feasible": False, "evaluation_s": 2.0}
    for n in (1, 2):
        before = [{**base, "backend": b, "prompt_tokens_new": 1500, "prompt_s": 30.0, "streamed_tokens": 1,
                   "generation_s": 0.1, "llm_s": 30.1, "attempt_s": 30.1} for b in ("cpu", "npu-twin")]
        (earlier / f"before_prompts_in_flight_{n}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in before))
        # 100 prompt tokens/s and 10 answer tokens/s on the idle machine, with one operator in flight
        after = [{**base, "backend": b, "prompt_tokens_new": 500, "prompt_s": 5.0 * n, "streamed_tokens": 100,
                  "generation_s": 10.0 * n, "llm_s": 15.0 * n, "attempt_s": 17.0 * n} for b in ("cpu", "npu-twin")]
        (idle / f"after_attempts_in_flight_{n}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in after))
    assert publish(["--dir", str(idle), "--before-dir", str(earlier), "--before-commit", "a", "--after-commit", "b",
                    "--idle"]) == 0
    summary = json.loads((idle / "summary.json").read_text())
    cpu = summary["headline"]["median_attempt_s_cpu"]
    assert [(f["in_flight"], f["after"]) for f in cpu] == [(1, 17.0), (2, 34.0)]
    assert cpu[0]["after_basis"] == "measured: wall seconds on the idle machine"
    assert summary["idle_rates_tokens_per_s"]["in_flight_1"] == {"prompt": 100.0, "generation": 10.0}
    answer = summary["answers"]["before"].get("cpu", {}).get("answer_tokens_median")
    if answer is not None:  # the v3 benchmark's answers, where its raw state is unpacked under runs/
        assert cpu[0]["before"] == round(1500 / 100 + answer / 10 + 2.0, 3)
    assert summary["headline"]["new_token_share_median"][0]["before"] == 0.75


def test_the_estimate_applies_the_servers_reuse_rule():
    from bench.attempt_estimate import KV_BYTES_PER_TOKEN, new_tokens

    static, a, b = [1] * 100, [2] * 50, [3] * 50
    alternating = [static + a + [7], static + b + [7], static + a + [8]]  # A, B, A again
    # without the prompt cache the third prompt shares only the static part with B's
    assert new_tokens(alternating, cache_mb=0) == [151, 51, 51]
    # with it, A's saved state: only the last token is new
    assert new_tokens(alternating, cache_mb=64) == [151, 51, 1]
    # a cache too small to hold two states keeps only B's: back to the static part
    assert 2 * 151 * KV_BYTES_PER_TOKEN > 8 << 20
    assert new_tokens(alternating, cache_mb=8) == [151, 51, 51]
