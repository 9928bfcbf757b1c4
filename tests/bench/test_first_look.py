"""bench/first_look.py (issue 64.6) drives the real `evokernel run` per seed, reads its summary,
and continues a seed instead of running it again; here on the cpu backend with the loopback model."""

from __future__ import annotations

import json

from bench.first_look import figures, main
from tests.actors import replies
from tests.actors.openai_server import OpenAITestServer, ScriptedAgent
from tests.launch.test_run_command import FAST_HARNESS


def test_one_seed_runs_the_three_operators_and_is_read_again_not_rerun(tmp_path, capsys):
    with OpenAITestServer() as server:
        server.responder = ScriptedAgent([replies.FAST] * 12)  # a ReLU kernel for every request
        # one iteration each (the extra flags come last, so they win over the bench's four): the same
        # checks with 3 attempts instead of 12 (it was the default suite's slowest test, 68 s)
        extra = ["--", "--no-ray", "--backend", "cpu", "--llm-base-url", server.base_url, "--llm-model", server.model,
                 "--iterations", "1", *FAST_HARNESS]
        assert main(["--backend", "cpu", "--seeds", "0", "--out", str(tmp_path), *extra]) == 0
        line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        asked = len(server.chat_requests)
        # ReLU's kernel is right for 4_ReLU only; the others spend their iteration on it
        assert line["feasible_per_seed"] == {"0": ["4_ReLU"]} and line["seeds_with_2_of_3"] == 0
        assert not line["target_met"]
        assert main(["--backend", "cpu", "--seeds", "0", "--out", str(tmp_path), *extra]) == 0
        assert len(server.chat_requests) == asked  # a finished seed is read, not run again
    summary = json.loads((tmp_path / "seed-0" / "run" / "summary.json").read_text())
    assert summary["settings"]["llm"]["seed"] == 0 and summary["settings"]["memory"]["seed"] == 0


def test_the_target_is_two_of_three_operators_in_three_of_four_seeds():
    def summary(*feasible):
        return {"operators": [{"task": t, "feasible": t in feasible} for t in ("4_ReLU", "14_SumOverDim", "24_SquareMatmul")]}

    runs = {0: summary("4_ReLU", "14_SumOverDim"), 1: summary("4_ReLU", "24_SquareMatmul"),
            2: summary("4_ReLU"), 3: summary("4_ReLU", "14_SumOverDim", "24_SquareMatmul")}
    assert figures(runs, "npu-twin")["target_met"] is True
    runs[3] = summary("4_ReLU")
    assert figures(runs, "npu-twin")["target_met"] is False
