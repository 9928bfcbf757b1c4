"""bench.learning end to end at a tiny size (scripted HTTP LLM, real harness, real LanceDB
banks, no Ray), and the frozen bank: an evaluation draft leaves a real bank as it was."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import threading
from pathlib import Path

import pytest

from bench.learning.cli import main
from bench.learning.evaluation import FrozenBankChanged, bank_digest, draft_settings, run_draft_pass
from bench.learning.learning_pass import LearningBenchmark
from bench.learning.plan import ARMS, parse_args
from bench.learning.resume import build_settings
from launch.campaign import Campaign, CampaignError
from tests.actors.openai_server import OpenAITestServer, Reply, ScriptedAgent, last_user_message
from tests.launch.kernel_agent import ELEMENTWISE, ElementwiseAgent, kernel_reply

SUITE = Path(__file__).resolve().parents[3] / "suites" / "cpu" / "level1"
FAST = ["--set", "harness.compile_baseline=false", "--set", "harness.timed_trials=5",
        "--set", "harness.warmup_trials=1", "--set", "harness.correctness_trials=2",
        "--set", "harness.profile_input_sets=1", "--set", "llm.candidate_format=kernel",
        "--set", "episode.review_flagged=false"]
OPERATORS = {"torch.relu(x)": "4_ReLU", "torch.sigmoid(x)": "7_Sigmoid", "torch.tanh(x)": "8_Tanh",
             "F.silu(x)": "6_SiLU"}


class SometimesAgent:
    """Drafts by operator and by how often it was asked: ReLU always right, Sigmoid right on odd
    calls, Tanh on even calls, SiLU on its first call only, GELU never (no code)."""

    RIGHT = {"4_ReLU": lambda n: True, "7_Sigmoid": lambda n: n % 2 == 1, "8_Tanh": lambda n: n % 2 == 0,
             "6_SiLU": lambda n: n == 1}

    def __init__(self):
        self.kinds = ScriptedAgent([])
        self.asked: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, body) -> Reply:
        kind = self.kinds.kind_of(body)
        if kind == "lesson":
            return Reply("Keep the loop simple.")
        if kind == "review":
            return Reply("VERDICT: LEGITIMATE\nfine")
        text = last_user_message(body)
        for marker, task in OPERATORS.items():
            if marker in text:
                with self.lock:
                    self.asked[task] = n = self.asked.get(task, 0) + 1
                expression = ELEMENTWISE[marker] if self.RIGHT[task](n) else "x[i] + 1.f"
                return Reply(kernel_reply(expression, n if kind == "refine" else 0))
        return Reply("I do not know this operator.")


@pytest.fixture
def suite(tmp_path) -> Path:
    root = tmp_path / "suite" / "level1"
    root.mkdir(parents=True)
    for name in ("4_ReLU", "7_Sigmoid", "5_GELU", "8_Tanh", "6_SiLU"):
        shutil.copyfile(SUITE / f"{name}.py", root / f"{name}.py")
    return root.parent


def last_json_line(text: str) -> dict:
    return json.loads(text.strip().splitlines()[-1])


@pytest.mark.slow  # 13 campaigns: 3 minutes on the 2-core machine, over 10 at a load average of 26
@pytest.mark.timeout(1800)
def test_screening_learning_frozen_evaluation_summary_and_resume(suite, tmp_path, capsys):
    out = tmp_path / "results"
    with OpenAITestServer() as server:
        agent = SometimesAgent()
        server.responder = agent
        argv = [*FAST, "--set", f"harness.build_cache_dir={tmp_path / 'build'}", "--suite", str(suite),
                "--pool", "4_ReLU,7_Sigmoid,5_GELU,8_Tanh,6_SiLU", "--screen-drafts", "2", "--eval-drafts", "2",
                "--iterations", "2", "--min-heldout", "2", "--llm-base-url", server.base_url,
                "--llm-model", server.model, "--out", str(out)]
        assert main(argv) == 0
        headline = last_json_line(capsys.readouterr().out)
        asked = dict(agent.asked)

        # Screening, 2 drafts: ReLU 2/2, Sigmoid 1/2, Tanh 1/2, SiLU 1/2, GELU 0/2; the band (3) is
        # under 20, so the borderline operators of the family that solved something (elementwise:
        # ReLU, GELU) got 2 more drafts. All five are elementwise (Tanh and SiLU since the wide
        # pool's families), a family with a member solved every time: no band member is reserved
        # for the curriculum, all three are held out.
        screening = json.loads((out / "screening.json").read_text())
        assert screening["outcomes"] == {"4_ReLU": [True] * 4, "7_Sigmoid": [True, False], "5_GELU": [False] * 4,
                                         "8_Tanh": [False, True], "6_SiLU": [True, False]}
        assert screening["stage2"] == ["4_ReLU", "5_GELU"] and screening["band"] == 3
        assert screening["heldout"] == ["7_Sigmoid", "8_Tanh", "6_SiLU"] and screening["underpowered"]
        assert screening["curriculum"] == ["4_ReLU", "5_GELU"]
        for r in range(4):  # screening drafts: retrieval none, one iteration, the seeded bank read-only
            run = json.loads((out / "arms" / f"screen-d{r}" / "summary.json").read_text())
            assert run["settings"]["memory"]["retrieval"] == "none" and run["settings"]["episode"]["iterations"] == 1
            assert run["settings"]["memory"]["uri"] == str(out / "banks" / "seeded")
            assert run["run_id"] == f"{out.name}-screen-d{r}"  # the folder's name, not a design's

        # The learning pass: each arm over the curriculum, its own bank; the held-out operators never
        for arm in ("none", "similarity", "value"):
            run = json.loads((out / "arms" / f"learn-{arm}" / "summary.json").read_text())
            assert [op["task"] for op in run["operators"]] == screening["curriculum"]
            assert run["settings"]["memory"]["retrieval"] == arm and run["settings"]["episode"]["iterations"] == 2
        frozen, settings = json.loads((out / "frozen.json").read_text()), _settings(argv)
        for arm in ("none", "similarity", "value"):  # evaluation changed no bank
            assert bank_digest(out / "banks" / f"learn-{arm}", settings) == frozen[arm]
            for r in range(2):
                run = json.loads((out / "arms" / f"eval-{arm}-d{r}" / "summary.json").read_text())
                assert [op["task"] for op in run["operators"]] == ["7_Sigmoid", "8_Tanh", "6_SiLU"]
                assert run["settings"]["memory"]["uri"] == str(out / "banks" / f"learn-{arm}")
                assert run["run_id"] == f"{out.name}-eval-{arm}-d{r}"

        summary = json.loads((out / "summary.json").read_text())
        evaluation = {f["arm"]: f for f in summary["evaluation"]}
        assert all(f["drafts"] == 6 and f["operators"] == 3 for f in evaluation.values())
        assert evaluation["none"]["pass1_by_operator"]["6_SiLU"] == 0.0  # SiLU is right on its first call only
        assert summary["verdict"]["primary"] == "value_vs_similarity" and summary["meta"]["complete"]
        assert set(summary["tests"]) == {"value_vs_similarity", "value_vs_none", "similarity_vs_none"}
        assert headline["design"] == "v3" and headline["backend"] == "cpu"
        for arm in ("none", "similarity", "value"):
            assert headline[f"pass1_{arm}"] == evaluation[arm]["pass1"] and f"fast_0_{arm}" in headline
        assert "p_value_value_vs_similarity" in headline and "| value vs similarity (primary) | 3 |" in (
            out / "summary.md").read_text()

        # Finished: a rerun asks nothing and says the same.
        assert main(argv) == 0
        assert agent.asked == asked
        again = last_json_line(capsys.readouterr().out)
        assert {k: v for k, v in again.items() if k != "wall_s"} == {k: v for k, v in headline.items() if k != "wall_s"}

        # The interim table runs nothing either.
        assert main([*argv, "--summary-so-far"]) == 0 and agent.asked == asked
        assert last_json_line(capsys.readouterr().out)["pass1_value"] == headline["pass1_value"]

        # Interrupted in an evaluation pass after its second operator: the rerun drafts only the third.
        path = out / "arms" / "eval-value-d1" / "summary.json"
        run = json.loads(path.read_text())
        path.write_text(json.dumps(run | {"finished_at": None, "operators": run["operators"][:2]}))
        assert main(argv) == 0
        assert {t: agent.asked[t] - asked.get(t, 0) for t in agent.asked} == {
            "4_ReLU": 0, "7_Sigmoid": 0, "8_Tanh": 0, "6_SiLU": 1}
        assert json.loads(path.read_text())["finished_at"]

        with pytest.raises(SystemExit, match="another plan"):
            main([*argv, "--eval-drafts", "3"])


def _settings(argv):
    return build_settings(parse_args(argv))


def test_an_evaluation_draft_leaves_a_real_bank_as_it_was_and_a_cut_pass_resumes(tmp_path):
    """A feasible draft in value retrieval would add a trace and update values; against the
    frozen bank it does neither. The same draft through a normal campaign does change the bank
    (the digest can see a change). A pass cut after its first operator drafts only the second."""
    task = [SUITE / "4_ReLU.py"]
    with OpenAITestServer() as server:
        agent = SometimesAgent()
        server.responder = agent
        settings = _settings([*FAST, "--set", f"harness.build_cache_dir={tmp_path / 'build'}",
                              "--llm-base-url", server.base_url, "--llm-model", server.model])
        bench = LearningBenchmark(settings, tmp_path / "results")
        bench.run_arm("learn-value", ARMS["value"], task, iterations=1, seed=0)  # a bank with a ReLU trace
        bank = bench.banks / "learn-value"
        files = {p.relative_to(bank): p.read_bytes() for p in bank.rglob("*") if p.is_file()}
        before = bank_digest(bank, settings)

        assert run_draft_pass(settings, tmp_path / "eval", bank, ARMS["value"], task, seed=1, run_id="eval")
        attempts = [json.loads(line) for line in (tmp_path / "eval" / "attempts.jsonl").read_text().splitlines()]
        assert [a["feasible"] for a in attempts] == [True]
        assert bank_digest(bank, settings) == before
        assert {p.relative_to(bank): p.read_bytes() for p in bank.rglob("*") if p.is_file()} == files
        assert not run_draft_pass(settings, tmp_path / "eval", bank, ARMS["value"], task, seed=1, run_id="eval")

        # interrupted after its first operator (as a kill leaves summary.json): only the second is drafted again
        tasks = [SUITE / "7_Sigmoid.py", SUITE / "8_Tanh.py"]
        assert run_draft_pass(settings, tmp_path / "cut", bank, ARMS["value"], tasks, seed=1, run_id="cut")
        path = tmp_path / "cut" / "summary.json"
        run = json.loads(path.read_text())
        path.write_text(json.dumps(run | {"finished_at": None, "operators": run["operators"][:1]}))
        asked = dict(agent.asked)
        assert run_draft_pass(settings, tmp_path / "cut", bank, ARMS["value"], tasks, seed=1, run_id="cut")
        assert {t: agent.asked[t] - asked[t] for t in asked} == {"4_ReLU": 0, "7_Sigmoid": 0, "8_Tanh": 1}
        assert [op["task"] for op in json.loads(path.read_text())["operators"]] == ["7_Sigmoid", "8_Tanh"]
        assert bank_digest(bank, settings) == before

        # control: a normal campaign on a copy does change it
        copy = tmp_path / "copy"
        shutil.copytree(bank, copy)
        asyncio.run(Campaign(draft_settings(settings, ARMS["value"], copy, 1), tmp_path / "normal").run(task))
        assert bank_digest(copy, settings) != before


def test_an_arm_killed_between_operators_resumes_at_the_next_one_with_its_bank_as_it_was(tmp_path):
    """The bank is copied after every finished operator; a rerun restores that copy (here the
    live bank is even deleted) and asks the model nothing about the operators already done."""
    from memory_actor.bank import MemoryBank

    tasks = [SUITE / "4_ReLU.py", SUITE / "8_Tanh.py"]
    asked: dict[str, int] = {}
    with OpenAITestServer() as server:
        agent = ElementwiseAgent()
        outage = {"on": True}

        def responder(body):
            prompt = last_user_message(body)
            operator = "tanh" if "torch.tanh(x)" in prompt else "relu"
            asked[operator] = asked.get(operator, 0) + 1
            if outage["on"] and operator == "tanh":  # a fatal endpoint error on the second operator
                return Reply(status=401, error="scripted key revoked")
            return agent(body)

        server.responder = responder
        settings = _settings([*FAST, "--set", f"harness.build_cache_dir={tmp_path / 'build'}", "--set",
                              "episode.lessons=false", "--llm-base-url", server.base_url, "--llm-model", server.model])
        bench = LearningBenchmark(settings, tmp_path / "results")
        banks, arm = bench.banks, bench.arm_dir("learn-value")
        with pytest.raises(CampaignError, match="refused the API key"):
            bench.run_arm("learn-value", ARMS["value"], tasks, iterations=2, seed=0)
        assert json.loads((banks / "learn-value.after-1.json").read_text()) == {"operators": ["4_ReLU"]}
        assert not bench.finished("learn-value") and asked["relu"] == 2
        shutil.rmtree(banks / "learn-value")  # whatever the live bank holds now, the copy wins

        outage["on"] = False
        assert bench.run_arm("learn-value", ARMS["value"], tasks, iterations=2, seed=0)
        assert asked["relu"] == 2 and bench.finished("learn-value")
        attempts = [json.loads(line) for line in (arm / "attempts.jsonl").read_text().splitlines()]
        assert [a["task"] for a in attempts] == ["4_ReLU", "4_ReLU", "8_Tanh", "8_Tanh"]
        run = json.loads((arm / "summary.json").read_text())
        assert len(run["resumed_at"]) == 1 and [op["task"] for op in run["operators"]] == ["4_ReLU", "8_Tanh"]
        assert not list(banks.glob("learn-value.after-*"))  # a finished arm keeps no copies
        starts = [line.split() for line in (arm / "git_commits").read_text().splitlines()]
        assert [how for _, _, how in starts] == ["started", "resumed"]
        # each start names the code it ran under (commits may land meanwhile: the checkout is shared)
        assert all(re.fullmatch(r"[0-9a-f]{40}|unknown", commit) for commit, _, _ in starts)

    bank = MemoryBank(bench.settings.memory.model_copy(update={"uri": str(banks / "learn-value")}))
    try:  # the restored bank still holds what ReLU's attempts left, and Tanh's were added to it
        traces = {item.task_id for item in bank.items.values() if item.kind == "trace"}
    finally:
        bank.close()
    assert traces == {"4_ReLU", "8_Tanh"}


def test_the_learn_command_runs_a_learning_pass_alone(tmp_path, capsys):
    """`python -m bench.learning learn` (what bench/attempt_record.py records through): the given
    operators in one arm, its bank digested into frozen.json; no screening, no evaluation."""
    out = tmp_path / "results"
    with OpenAITestServer() as server:
        server.responder = SometimesAgent()
        assert main(["learn", "--tasks", "4_ReLU", "--arms", "similarity", "--iterations", "1", "--out", str(out),
                     *FAST, "--set", f"harness.build_cache_dir={tmp_path / 'build'}", "--set", "episode.lessons=false",
                     "--llm-base-url", server.base_url, "--llm-model", server.model]) == 0
    line = last_json_line(capsys.readouterr().out)
    assert line["learning_pass_only"] and line["arms"] == ["similarity"] and line["results"] == str(out)
    run = json.loads((out / "arms" / "learn-similarity" / "summary.json").read_text())
    assert run["finished_at"] and [op["task"] for op in run["operators"]] == ["4_ReLU"]
    assert list(json.loads((out / "frozen.json").read_text())) == ["similarity"]
    assert not (out / "screening.json").exists() and sorted(p.name for p in (out / "arms").iterdir()) == [
        "learn-similarity"]


def test_a_changed_bank_stops_the_evaluation(tmp_path, monkeypatch):
    import bench.learning.evaluation as frozen

    digests = iter(["a", "b"])
    monkeypatch.setattr(frozen, "bank_digest", lambda uri, settings: next(digests))
    monkeypatch.setattr(frozen, "FrozenCampaign", _NoopCampaign)
    settings = _settings([])
    with pytest.raises(FrozenBankChanged, match="must not"):
        frozen.run_draft_pass(settings, tmp_path / "eval", tmp_path / "bank", ARMS["value"], [], seed=0, run_id="x")


class _NoopCampaign:
    def __init__(self, *args, **kwargs):
        pass

    async def run(self, tasks):
        return {}
