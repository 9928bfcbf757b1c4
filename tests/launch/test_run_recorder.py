"""The run recorder's counters start from what the run folder holds (issue 24): a resumed run
and a recorder that Ray restarted show the run's figures, not zero.

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
from launch.metrics import metrics_url, parse_prometheus
from launch.roles import ROLES, Role
from launch.run_summary import RunSummary

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


def _recorder(run_dir: Path, run_id: str) -> ray.actor.ActorHandle:
    return ROLES[Role.RUN_RECORDER].remote({}, run_id=run_id).remote(str(run_dir), run_id, 4)


def test_a_recorder_over_a_run_folder_starts_from_its_figures(local_ray, tmp_path):
    run_dir = tmp_path / "run"
    _run_folder(run_dir)
    recorder = _recorder(run_dir, "r1")
    counters = ray.get(recorder.set_running.remote(1))
    assert (counters.planned, counters.done, counters.feasible, counters.running) == (4, 2, 1, 1)
    assert counters.attempts == 5 and counters.attempts_by_gate == {"ok": 3, "compile": 1, "correctness": 1}
    assert (counters.tokens_prompt, counters.tokens_completion) == (500, 50)
    assert counters.speedups == {"4_ReLU": 2.5}
    assert "2/4 done (1 running) | 1 feasible" in counters.line() and "5 attempts" in counters.line()
    # the operator in flight keeps its figures so far, for a stop before it reports
    partial = ray.get(recorder.partial_result.remote("6_SiLU"))
    assert (partial.attempts, partial.feasible, partial.first_feasible_iteration) == (2, True, 2)
    # a result it already read back (a call Ray retried) is not counted twice
    ray.get(recorder.operator_done.remote(EpisodeResult(task="4_ReLU", feasible=True, speedup_vs_eager=2.5)))
    assert ray.get(recorder.set_running.remote(1)).done == 2
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
