"""The run recorder's counters start from what the run folder holds (issue 24): a resumed run
and a recorder that Ray restarted show the run's figures, not zero. An operator a stop cut short
is neither done nor failed, before and after the resume that runs it again.

Both tests run the recorder as Ray runs it, an actor of a real local Ray instance (the role's
options: restarted without limit, its calls retried). The restart test kills the actor's
worker and reads the counters the new one answers with, then the metrics it exports.
"""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import pytest
import ray

from actors.messages import Attempt, EpisodeResult
from launch.config import load_settings
from launch.kernel_files import KernelTask
from launch.metrics import metrics_url, parse_prometheus
from launch.ray_campaign.concurrent_campaign import ConcurrentCampaign
from launch.ray_campaign.roles import ROLES, Role
from launch.run_summary import INTERRUPTED, RunSummary

NAMESPACE = "evokernel-run-recorder-test"


@pytest.fixture(scope="module")
def local_ray():
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False, namespace=NAMESPACE)
    yield
    ray.shutdown()


def _attempt(task: str, iteration: int, gate: str = "ok", feasible: bool = True) -> Attempt:
    return Attempt(run_id="r1", task=task, iteration=iteration, stage="draft" if iteration == 1 else "refine",
                   gate=gate, feasible=feasible, latency_ms=1.0 if feasible else None,
                   speedup_vs_eager=2.0 if feasible else None, tokens_prompt=100, tokens_completion=10,
                   attempt_id=f"{task}-{iteration}")


def _run_folder(run_dir: Path) -> None:
    """A run that finished 4_ReLU (feasible, 2.5x) and 19_ReLU (infeasible), with 6_SiLU in flight."""
    run_dir.mkdir()
    RunSummary(run_id="r1", planned=["4_ReLU", "6_SiLU", "19_ReLU", "7_Sigmoid"], operators=[
        EpisodeResult(task="4_ReLU", feasible=True, attempts=2, best_latency_ms=1.0, speedup_vs_eager=2.5),
        EpisodeResult(task="19_ReLU", attempts=1, stopped_by="iterations"),
    ]).write(run_dir)
    attempts = [_attempt("4_ReLU", 1), _attempt("4_ReLU", 2), _attempt("19_ReLU", 1, "compile", False),
                _attempt("6_SiLU", 1, "correctness", False), _attempt("6_SiLU", 2)]
    (run_dir / "attempts.jsonl").write_text("".join(a.model_dump_json() + "\n" for a in attempts)
                                            + '{"run_id": "r1", "task": "6_Si')  # a killed writer's torn line


def _recorder(run_dir: Path, run_id: str, planned: int = 4) -> ray.actor.ActorHandle:
    return ROLES[Role.RUN_RECORDER].remote({}, run_id=run_id).remote(str(run_dir), run_id, planned)


def test_a_recorder_over_a_run_folder_starts_from_its_figures(local_ray, tmp_path):
    run_dir = tmp_path / "run"
    _run_folder(run_dir)
    recorder = _recorder(run_dir, "r1")
    counters = ray.get(recorder.set_running.remote(1))
    assert (counters.planned, counters.done, counters.feasible, counters.running) == (4, 2, 1, 1)
    assert counters.attempts == 5 and counters.attempts_by_gate == {"ok": 3, "compile": 1, "correctness": 1}
    assert (counters.tokens_prompt, counters.tokens_completion) == (500, 50)
    assert counters.speedups == {"4_ReLU": 2.5}
    # 6_SiLU, in flight, already has a kernel: shown apart, since a stop keeps it
    assert (counters.feasible_in_flight, "2/4 done (1 running) | 1 feasible (+1 in flight), 0 failed") == \
        (1, counters.line().split(" | speedup")[0])
    assert "5 attempts" in counters.line()
    # the operator in flight keeps its figures so far, for a stop before it reports
    partial = ray.get(recorder.partial_result.remote("6_SiLU"))
    assert (partial.attempts, partial.feasible, partial.first_feasible_iteration) == (2, True, 2)
    # a result it already read back (a call Ray retried) is not counted twice
    ray.get(recorder.operator_done.remote(EpisodeResult(task="4_ReLU", feasible=True, speedup_vs_eager=2.5)))
    assert ray.get(recorder.set_running.remote(1)).done == 2
    ray.kill(recorder, no_restart=True)


def test_an_operator_run_again_starts_its_figures_afresh(local_ray, tmp_path):
    """An operator lost with its node runs again from iteration 1 (launch.ray_campaign.lost_operators): what
    its lost try reached (6_SiLU feasible at iteration 2) no longer speaks for it, neither for a
    stop during the new try nor in the live line, and a recorder Ray restarts reads it so too."""
    run_dir = tmp_path / "run"
    _run_folder(run_dir)
    recorder = _recorder(run_dir, "r4")
    ray.get(recorder.operator_started.remote(KernelTask(task="6_SiLU", backend="cpu", candidate_format="kernel")))
    assert ray.get(recorder.partial_result.remote("6_SiLU")).attempts == 0
    assert ray.get(recorder.set_running.remote(1)).feasible_in_flight == 0
    ray.get(recorder.append.remote(_attempt("6_SiLU", 1, "compile", False)))
    held = ray.get(recorder.partial_result.remote("6_SiLU"))
    assert (held.attempts, held.feasible, held.tokens) == (1, False, 110)
    ray.kill(recorder, no_restart=True)
    recorder = _recorder(run_dir, "r4")  # over the folder: the lost try's iterations 1-2, then the new try's 1
    held = ray.get(recorder.partial_result.remote("6_SiLU"))
    assert (held.attempts, held.feasible, held.tokens) == (1, False, 110)
    assert ray.get(recorder.set_running.remote(1)).attempts == 6  # every attempt is still counted
    ray.kill(recorder, no_restart=True)


def test_a_reply_no_code_came_from_reaches_the_recorder_and_is_kept_until_the_operator_starts_again(local_ray, tmp_path):
    """The reply travels with the attempt to the recorder actor (it is left out of attempts.jsonl),
    which keeps it in RUN_DIR/replies/ and names it on the attempt's line (launch/reply_files.py)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    recorder = _recorder(run_dir, "r5", planned=1)
    ray.get(recorder.append.remote(Attempt(run_id="r5", task="6_SiLU", iteration=1, stage="draft", gate="no_code",
                                           category="no_code", reason="no code block defines a `kernel` function",
                                           reply="Here is the idea: out = x * sigmoid(x).")))
    [line] = [json.loads(text) for text in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert line["reply_file"] == "replies/6_SiLU/1-draft.md" and "reply" not in line
    assert "Here is the idea: out = x * sigmoid(x)." in (run_dir / line["reply_file"]).read_text()
    ray.get(recorder.operator_started.remote(KernelTask(task="6_SiLU", backend="cpu", candidate_format="kernel")))
    assert not (run_dir / line["reply_file"]).exists()  # run again from its first attempt: its own replies only
    ray.kill(recorder, no_restart=True)


SUITE = Path(__file__).resolve().parents[3] / "suites" / "cpu" / "level1"


def _interrupted(recorder: ray.actor.ActorHandle, task: str) -> EpisodeResult:
    """What the campaign reports for an operator its stop cut short (ConcurrentCampaign._partial)."""
    held = ray.get(recorder.partial_result.remote(task))
    result = held.model_copy(update={"stopped_by": INTERRUPTED, "error": INTERRUPTED})
    ray.get(recorder.operator_done.remote(result))
    return result


def test_an_interrupted_operator_is_neither_done_nor_failed_nor_counted_twice_after_resume(local_ray, tmp_path):
    """The README's first command stopped with 1_Add (feasible so far) and 2_Multiply in flight
    said `2/79 done | 1 feasible, 2 failed`. Here 1_Add ends feasible, 2_Multiply (feasible so
    far) and 3_ScaleShift are cut short; then the run folder is resumed as `--resume` does."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    paths = [SUITE / f"{task}.py" for task in ("1_Add", "2_Multiply", "3_ScaleShift")]
    RunSummary(run_id="r3", planned=[p.stem for p in paths], planned_paths=[str(p) for p in paths]).write(run_dir)
    recorder = _recorder(run_dir, "r3", planned=3)
    for attempt in (_attempt("1_Add", 1), _attempt("1_Add", 2), _attempt("2_Multiply", 1),
                    _attempt("3_ScaleShift", 1, "compile", False)):
        ray.get(recorder.append.remote(attempt))
    add = EpisodeResult(task="1_Add", feasible=True, attempts=2, best_latency_ms=1.0, speedup_vs_eager=2.0)
    ray.get(recorder.operator_done.remote(add))
    cut_short = [_interrupted(recorder, "2_Multiply"), _interrupted(recorder, "3_ScaleShift")]
    assert cut_short[0].feasible  # its feasible attempt so far does not make it a feasible operator
    ray.get(recorder.operator_done.remote(cut_short[0]))  # a call Ray retried
    counters = ray.get(recorder.set_running.remote(0))
    assert (counters.done, counters.feasible, counters.failed, counters.interrupted) == (1, 1, 0, 2)
    assert counters.speedups == {"1_Add": 2.0} and counters.attempts == 4
    # issue 55: the last line says what the final table counts (2_Multiply's kernel, interrupted)
    assert counters.line().startswith("1/3 done (0 running, 2 interrupted) | 1 feasible (+1 interrupted), 0 failed |")
    # the stop's summary, then a recorder over it (Ray restarting it during the stop): the same figures
    stopped = RunSummary(run_id="r3", planned=[p.stem for p in paths], planned_paths=[str(p) for p in paths],
                         operators=[add, *cut_short], interrupted=True)
    stopped.write(run_dir)
    ray.kill(recorder, no_restart=True)
    recorder = _recorder(run_dir, "r3", planned=3)
    counters = ray.get(recorder.set_running.remote(0))
    assert (counters.done, counters.feasible, counters.failed, counters.interrupted) == (1, 1, 0, 2)
    assert ray.get(recorder.partial_result.remote("2_Multiply")).attempts == 1  # still there for a stop
    ray.kill(recorder, no_restart=True)
    # `evokernel run --resume`: the campaign keeps 1_Add and writes its summary before the recorder starts
    settings = load_settings(None, {"memory": {"uri": str(tmp_path / "bank")}, "harness": {"backend": "cpu"}})
    campaign, planned = ConcurrentCampaign.resume(settings, run_dir)
    assert planned == paths and [op.task for op in campaign.operators] == ["1_Add"]
    campaign._write()
    recorder = _recorder(run_dir, "r3", planned=3)
    counters = ray.get(recorder.set_running.remote(2))
    assert (counters.done, counters.feasible, counters.failed, counters.interrupted, counters.attempts) == (1, 1, 0, 0, 2)
    assert counters.line().startswith("1/3 done (2 running) | 1 feasible, 0 failed |")
    assert ray.get(recorder.partial_result.remote("2_Multiply")).attempts == 0  # its attempts were set aside
    ray.get(recorder.append.remote(_attempt("2_Multiply", 1)))
    ray.get(recorder.operator_done.remote(EpisodeResult(task="2_Multiply", feasible=True, attempts=1,
                                                        best_latency_ms=1.0, speedup_vs_eager=1.5)))
    ray.get(recorder.append.remote(_attempt("3_ScaleShift", 1, "compile", False)))
    ray.get(recorder.operator_done.remote(EpisodeResult(task="3_ScaleShift", attempts=1, stopped_by="error",
                                                        error="episode task failed: worker died")))
    counters = ray.get(recorder.set_running.remote(0))
    assert (counters.done, counters.feasible, counters.failed, counters.interrupted, counters.attempts) == (3, 2, 1, 0, 4)
    assert counters.line().startswith("3/3 done (0 running) | 2 feasible, 1 failed |")
    ray.kill(recorder, no_restart=True)


def _exported(run_id: str, expected: dict[str, float], timeout_s: float = 90.0) -> dict[str, float]:
    """This node's ray_evokernel_* series of the run, summed over workers, once they show
    `expected` (or what they show at the timeout)."""
    url = metrics_url()
    assert url, "the local Ray exports no metrics (ray[default] missing?)"
    deadline = time.monotonic() + timeout_s
    found: dict[str, float] = {}
    while time.monotonic() < deadline:
        with urllib.request.urlopen(url, timeout=10) as response:
            series = parse_prometheus(response.read().decode(), "ray_evokernel")
        found = {}
        for name, samples in series.items():
            for labels, value in samples:
                if labels.get("run") == run_id:
                    key = name + "".join(f",{k}={labels[k]}" for k in ("state", "gate", "kind") if k in labels)
                    found[key] = found.get(key, 0.0) + value
        if all(found.get(key) == value for key, value in expected.items()):
            return found
        time.sleep(2)
    return found


def _gauges(url: str, run_id: str) -> dict[str, list[float]]:
    """ray_evokernel_operators by state, every series' value."""
    with urllib.request.urlopen(url, timeout=10) as response:
        samples = parse_prometheus(response.read().decode(), "ray_evokernel_operators").get("ray_evokernel_operators", [])
    found: dict[str, list[float]] = {}
    for labels, value in samples:
        if labels.get("run") == run_id:
            found.setdefault(labels["state"], []).append(value)
    return found


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_restarted_recorder_keeps_counting_from_the_run_folder(local_ray, tmp_path):
    run_dir = tmp_path / "run"
    _run_folder(run_dir)
    recorder = _recorder(run_dir, "r2")
    ray.get(recorder.append.remote(_attempt("6_SiLU", 3)))
    pid = ray.get(recorder.__ray_call__.remote(lambda self: __import__("os").getpid()))
    ray.kill(recorder, no_restart=False)  # as the memory monitor would: Ray restarts it
    deadline = time.monotonic() + 120
    while ray.get(recorder.__ray_call__.remote(lambda self: __import__("os").getpid())) == pid:
        assert time.monotonic() < deadline, "Ray did not restart the recorder"
        time.sleep(0.5)  # the kill is asynchronous: calls may still reach the old worker
    ray.get(recorder.operator_done.remote(EpisodeResult(task="6_SiLU", feasible=True, attempts=3,
                                                        best_latency_ms=1.0, speedup_vs_eager=2.0)))
    counters = ray.get(recorder.set_running.remote(0))
    assert (counters.done, counters.feasible, counters.attempts) == (3, 2, 6)
    assert counters.speedups == {"4_ReLU": 2.5, "6_SiLU": 2.0}
    lines = (run_dir / "attempts.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["attempt_id"] == "6_SiLU-3"  # appended after the torn line, on a line of its own
    # What is exported for the run, summed over workers as the dashboard's queries sum it, is
    # the run's: Ray keeps exporting the killed worker's counters beside the new one's, which
    # therefore adds only what came after the restart, while its gauges show the whole run.
    expected = {"ray_evokernel_attempts_total,gate=ok": 4, "ray_evokernel_attempts_total,gate=correctness": 1,
                "ray_evokernel_attempts_total,gate=compile": 1, "ray_evokernel_llm_tokens_total,kind=prompt": 600}
    found = _exported("r2", expected)
    assert {key: found.get(key) for key in expected} == expected, found
    deadline = time.monotonic() + 90
    while (gauges := _gauges(metrics_url(), "r2")).get("done") != [3] and time.monotonic() < deadline:
        time.sleep(2)  # the new worker's first export
    assert (gauges.get("done"), gauges.get("feasible")) == ([3], [2]), gauges
    ray.kill(recorder, no_restart=True)
