"""Operators lost with their node (launch.ray_campaign.lost_operators): told apart from an episode's own
failure by Ray's own exceptions, run again within a budget, and otherwise reported as
infrastructure by `evokernel run` (exit 1, the resume command; not counted feasible). The
campaign's retry on a real cluster is tests/launch/test_ray_up.py's (slow) cut-off worker."""

from __future__ import annotations

import ray.exceptions

from actors.episode_factory import INFRA
from actors.messages import EpisodeResult
from launch.commands.run_outcome import end_of_run, print_summary
from launch.ray_campaign.lost_operators import LOST, LostOperators, lost_with_its_node
from launch.run_summary import RunSummary

NODE_DIED = "Task failed because the node it was running on is dead or unavailable. Node IP: 10.0.0.12"


def _remote(cause: BaseException) -> BaseException:
    """CAUSE as the driver sees it from a task: a RayTaskError that is an instance of it too."""
    return ray.exceptions.RayTaskError("run_episode", "Traceback ...", cause, ip="10.0.0.11").as_instanceof_cause()


def test_losses_are_told_apart_from_an_episodes_own_failure():
    for lost in (ray.exceptions.NodeDiedError(NODE_DIED), ray.exceptions.WorkerCrashedError(),
                 ray.exceptions.ActorDiedError(), _remote(ray.exceptions.ActorDiedError()),
                 ray.exceptions.OutOfMemoryError("the memory monitor killed the worker")):
        assert lost_with_its_node(lost), type(lost)
    for own in (ValueError("bad task"), _remote(RuntimeError("the episode failed")), KeyError("x")):
        assert not lost_with_its_node(own), type(own)


def test_an_operator_runs_again_once_and_every_lost_try_is_kept():
    lost = LostOperators(retries=1)
    assert lost.run_again("6_SiLU", "NodeDiedError: ... 10.0.0.12") is True
    assert lost.run_again("6_SiLU", "NodeDiedError: ... 10.0.0.11") is False  # lost again: reported
    assert lost.run_again("7_Sigmoid", "ActorDiedError: ...") is True
    assert lost.tries == {"6_SiLU": ["NodeDiedError: ... 10.0.0.12", "NodeDiedError: ... 10.0.0.11"],
                          "7_Sigmoid": ["ActorDiedError: ..."]}
    resumed = LostOperators(retries=1, lost_tries=lost.tries)  # a resume keeps the record, with its own budget
    assert resumed.run_again("6_SiLU", "WorkerCrashedError: ...") is True and len(resumed.tries["6_SiLU"]) == 3
    assert LostOperators.is_lost(f"{LOST}: NodeDiedError: ...") and not LostOperators.is_lost("LLM endpoint fault: x")


def _summary() -> RunSummary:
    return RunSummary(run_id="r", operators=[
        EpisodeResult(task="4_ReLU", feasible=True, best_latency_ms=1.0, speedup_vs_eager=2.0, attempts=2, tokens=10),
        # found a kernel, then its node went twice: not finished, not judged
        EpisodeResult(task="6_SiLU", feasible=True, best_latency_ms=3.0, speedup_vs_eager=0.5, attempts=1,
                      tokens=5, stopped_by=INFRA, error=f"{LOST}: NodeDiedError: {NODE_DIED}"),
        EpisodeResult(task="8_Tanh", stopped_by=INFRA, error="LLM endpoint fault: empty reply: no choices"),
    ], lost_tries={"6_SiLU": ["NodeDiedError: a", "NodeDiedError: b"], "7_Sigmoid": ["WorkerCrashedError: c"]})


def test_operators_lost_once_too_often_exit_1_with_the_resume_command(capsys):
    assert end_of_run(_summary(), "evokernel run --resume runs/cut") == 1
    err = capsys.readouterr().err
    assert "1 operator(s) lost with their node, not judged: 6_SiLU" in err
    assert "1 operator(s) stopped by the LLM endpoint's faults, not judged: 8_Tanh" in err
    assert err.count("continue with  evokernel run --resume runs/cut") == 1


def test_the_final_table_does_not_count_an_unfinished_operator_feasible(tmp_path, capsys):
    (tmp_path / "attempts.jsonl").write_text("")
    print_summary(_summary(), tmp_path)
    out = capsys.readouterr().out
    assert "1/3 operators feasible (2 stopped by infrastructure, not judged)" in out  # it read 2/3 before
    assert f"(not finished: {LOST}: NodeDiedError" in out
    assert "episodes lost with their node, each run again once: 6_SiLU (2x), 7_Sigmoid (1x)" in out
