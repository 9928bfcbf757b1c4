"""`evokernel report` on run folders made here: figures checked against hand-computed values."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import matplotlib.image
import pytest

from launch.cli import main
from launch.report import analyse_run
from launch.run_records import CorruptRunFolder

RUN_ID = "run-test"


def attempt(task: str, iteration: int, feasible: bool, latency: float | None = None,
            speedup: float | None = None, gate: str | None = None, **extra) -> dict:
    """One line of attempts.jsonl, in the format of docs/contracts.md (actors.messages.Attempt)."""
    record = {
        "run_id": RUN_ID, "task": task, "iteration": iteration,
        "stage": "refine" if iteration > 1 else "draft", "attempt_id": f"{task}-{iteration}",
        "parent_id": None, "retrieval_id": None, "retrieved_item_ids": [], "feasible": feasible,
        "gate": gate or ("ok" if feasible else "compile"), "reason": "" if feasible else f"{task} failed",
        "latency_ms": latency, "speedup_vs_eager": speedup, "reward": 1.0 if feasible else -1.0,
        "tokens_prompt": 100, "tokens_completion": 50, "wall_s": 1.0, "flags": [], "review": None,
        "timestamp": "2026-11-22T08:00:00+00:00",
    }
    record.update(extra)
    return record


# Relu: feasible from t=2 (10 ms, 0.8x eager), faster than eager from t=3 (5 ms, 1.6x).
# Softmax: feasible and faster at t=1 (4 ms, 2x), best at t=2 (1 ms, 8x).
# Gemm: never feasible.
ATTEMPTS = [
    attempt("1_Relu", 1, False),
    attempt("2_Softmax", 1, True, 4.0, 2.0),
    attempt("3_Gemm", 1, False, gate="hack"),
    attempt("1_Relu", 2, True, 10.0, 0.8),
    attempt("2_Softmax", 2, True, 1.0, 8.0),
    attempt("3_Gemm", 2, False),
    attempt("1_Relu", 3, True, 5.0, 1.6),
    attempt("3_Gemm", 3, False),
    attempt("1_Relu", 4, False, gate="correctness"),
]


def make_run(path: Path, attempts: list[dict], retrieval: str | None = "value", summary: bool = True,
             operators: list[dict] | None = None, tail: str = "") -> Path:
    path.mkdir(parents=True)
    lines = "".join(json.dumps(a) + "\n" for a in attempts)
    (path / "attempts.jsonl").write_text(lines + tail)
    if summary:
        tasks = sorted({a["task"] for a in attempts})
        (path / "summary.json").write_text(json.dumps({
            "run_id": RUN_ID, "started_at": "2026-11-22T08:00:00+00:00", "finished_at": "2026-11-22T09:00:00+00:00",
            "settings": {"memory": {"retrieval": retrieval}, "episode": {"iterations": 4},
                         "llm": {"model": "test-model", "api_key": "**********"}, "harness": {"backend": "cpu"}},
            "operators": operators if operators is not None else [{"task": t} for t in tasks],
            "totals": {},
        }))
    return path


def test_figures_match_hand_computed_values(tmp_path):
    report = analyse_run(make_run(tmp_path / "value-run", ATTEMPTS))
    assert report.problems == []
    assert report.curves.iterations == [1, 2, 3, 4]
    assert report.curves.fast_0 == pytest.approx([1 / 3, 2 / 3, 2 / 3, 2 / 3])
    assert report.curves.fast_1 == pytest.approx([1 / 3, 1 / 3, 2 / 3, 2 / 3])
    # best over first draft: Relu 10/5 = 2, Softmax 4/1 = 4
    first = report.speedup_best_over_first
    assert (first.n, first.median, first.q25, first.q75, first.iqr) == pytest.approx((2, 3.0, 2.5, 3.5, 1.0))
    assert first.geomean == pytest.approx(8 ** 0.5)
    # over eager: Relu 1.6, Softmax 8
    eager = report.speedup_vs_eager
    assert (eager.median, eager.q25, eager.q75) == pytest.approx((4.8, 3.2, 6.4))
    rows = {row.task: row for row in report.operators}
    relu = rows["1_Relu"]
    assert (relu.attempts, relu.first_feasible_iteration, relu.faster_than_eager_iteration) == (4, 2, 3)
    assert (relu.first_feasible_latency_ms, relu.best_latency_ms) == (10.0, 5.0)
    assert relu.failures == {"compile": 1, "correctness": 1}
    gemm = rows["3_Gemm"]
    assert not gemm.feasible and gemm.speedup_vs_eager is None and gemm.failures == {"hack": 1, "compile": 2}
    assert (report.attempts, report.tokens, report.feasible_operators) == (9, 9 * 150, 2)


def test_report_command_compares_runs_and_survives_damaged_input(tmp_path, capsys):
    value = make_run(tmp_path / "runs" / "value-30", ATTEMPTS)
    # A killed campaign: no summary.json, a half-written last line.
    damaged = [a for a in ATTEMPTS if a["task"] != "2_Softmax"]
    killed = make_run(tmp_path / "runs" / "killed", damaged, summary=False,
                      tail='{"run_id": "run-test", "task": "2_Softm')
    empty = tmp_path / "runs" / "empty"
    empty.mkdir()
    out = tmp_path / "report"

    assert main(["report", str(value), str(killed), str(empty), "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out

    summary = json.loads((out / "summary.json").read_text())
    runs = {run["label"]: run for run in summary["runs"]}
    assert set(runs) == {"value", "killed", "empty"}  # retrieval mode, else the folder name
    assert runs["value"]["curves"]["fast_0"] == pytest.approx([1 / 3, 2 / 3, 2 / 3, 2 / 3])
    assert runs["value"]["speedup_best_over_first"]["median"] == pytest.approx(3.0)
    killed_problems = " ".join(runs["killed"]["problems"])
    assert "half-written last line" in killed_problems
    assert "no summary.json" in killed_problems
    assert runs["killed"]["curves"]["fast_0"][-1] == pytest.approx(1 / 2)  # Relu of Relu and Gemm
    assert "no operators: the run is empty" in runs["empty"]["problems"]

    html = (out / "report.html").read_text()
    for name, file_name in summary["figures"].items():
        png = out / file_name
        image = matplotlib.image.imread(png)
        assert image.shape[0] > 200 and image.shape[1] > 300, name
        assert f'href="{file_name}"' in html
    embedded = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert len(embedded) == len(summary["figures"]) == 4
    assert base64.b64decode(embedded[0]) == (out / summary["figures"]["correctness"]).read_bytes()
    assert "half-written last line" in html and "3_Gemm" in html


@pytest.mark.parametrize("bad, why", [
    ({k: v for k, v in attempt("1_Relu", 2, True, 10.0, 0.8).items() if k != "iteration"}, "iteration: Field required"),
    (attempt("1_Relu", 2, "maybe"), "feasible: Input should be a valid boolean"),
    ("not json at all", "not JSON"),
], ids=["missing-field", "wrong-type", "not-json"])
def test_a_corrupt_attempt_line_is_an_error_naming_the_line(tmp_path, capsys, bad, why):
    run = make_run(tmp_path / "run", ATTEMPTS[:1])
    lines = (run / "attempts.jsonl").read_text()
    corrupt = bad if isinstance(bad, str) else json.dumps(bad)
    (run / "attempts.jsonl").write_text(lines + corrupt + "\n" + json.dumps(ATTEMPTS[1]) + "\n")
    with pytest.raises(CorruptRunFolder, match=f"attempts.jsonl line 2: .*{why}"):
        analyse_run(run)
    out = tmp_path / "out"
    assert main(["report", str(run), "--out", str(out)]) == 2  # bad input (docs/harness.md, "Exit codes")
    assert "attempts.jsonl line 2" in capsys.readouterr().err
    assert not out.exists()  # no figures from a damaged file


def test_summary_json_is_read_as_a_run_summary(tmp_path):
    run = make_run(tmp_path / "run", ATTEMPTS)
    summary = json.loads((run / "summary.json").read_text())
    (run / "summary.json").write_text(json.dumps({**summary, "finished_at": None, "interrupted": True}))
    report = analyse_run(run)
    assert report.problems == ["the campaign was interrupted (Ctrl-C or SIGTERM): evokernel run --resume continues it"]
    (run / "summary.json").write_text(json.dumps({**summary, "operators": [{"feasible": True}]}))
    report = analyse_run(run)
    assert any("is not a run summary: operators.0.task: Field required" in p for p in report.problems)
    assert report.retrieval is None and len(report.operators) == 3  # figures from attempts.jsonl alone


def test_operators_without_attempts_count_and_episode_errors_are_reported(tmp_path):
    operators = [{"task": "1_Relu"}, {"task": "2_Softmax"}, {"task": "3_Gemm"},
                 {"task": "4_Conv", "error": "task failed to load"}]
    report = analyse_run(make_run(tmp_path / "run", ATTEMPTS, operators=operators))
    assert len(report.operators) == 4
    assert report.curves.fast_0[-1] == pytest.approx(2 / 4)
    assert any("4_Conv: episode error: task failed to load" in p for p in report.problems)


def test_html_escapes_what_the_llm_and_harness_wrote(tmp_path):
    hostile = [attempt("1_Relu", 1, False, reason="<script>alert(1)</script>")]
    out = tmp_path / "out"
    assert main(["report", str(make_run(tmp_path / "run", hostile)), "--out", str(out)]) == 0
    html = (out / "report.html").read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_report_refuses_to_overwrite_a_run_summary(tmp_path, capsys):
    run = make_run(tmp_path / "run", ATTEMPTS)
    assert main(["report", str(run), "--out", str(run)]) == 2
    assert "would be overwritten" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing")]) == 2


def test_operators_known_only_from_summary_json_keep_their_figures(tmp_path):
    operators = [{"task": "1_Relu"}, {"task": "2_Softmax"}, {"task": "3_Gemm"},
                 {"task": "5_Sum", "feasible": True, "attempts": 6, "first_feasible_iteration": 3,
                  "best_latency_ms": 2.0, "first_feasible_latency_ms": 6.0, "speedup_best_over_first": 3.0,
                  "speedup_vs_eager": 1.5, "tokens": 900}]
    report = analyse_run(make_run(tmp_path / "run", ATTEMPTS, operators=operators))
    summed = next(row for row in report.operators if row.task == "5_Sum")
    assert (summed.feasible, summed.attempts, summed.first_feasible_iteration) == (True, 6, 3)
    assert report.curves.fast_0 == pytest.approx([1 / 4, 2 / 4, 3 / 4, 3 / 4])
    assert report.speedup_best_over_first.values == [2.0, 3.0, 4.0]
    assert any("5_Sum: 6 attempt(s) in summary.json but none in attempts.jsonl" in p for p in report.problems)


def test_reads_run_folders_written_from_the_actors_models(tmp_path):
    """Lines dumped from actors.messages.Attempt / EpisodeResult and redacted Settings, as the campaign writes them."""
    from actors.messages import Attempt, EpisodeResult
    from launch.config import Settings

    settings = Settings(memory={"retrieval": "similarity"}, episode={"iterations": 3})
    attempts = [Attempt(run_id="r1", task="1_Relu", iteration=1, stage="draft", gate="compile", reason="error: x"),
                Attempt(run_id="r1", task="1_Relu", iteration=2, stage="draft", gate="ok", feasible=True,
                        latency_ms=3.0, speedup_vs_eager=0.9),
                Attempt(run_id="r1", task="1_Relu", iteration=3, stage="refine", gate="ok", feasible=True,
                        latency_ms=1.5, speedup_vs_eager=1.8)]
    run = tmp_path / "run"
    run.mkdir()
    (run / "attempts.jsonl").write_text("".join(a.model_dump_json() + "\n" for a in attempts))
    result = EpisodeResult(task="1_Relu", feasible=True, attempts=3, first_feasible_iteration=2,
                           best_latency_ms=1.5, speedup_vs_eager=1.8)
    (run / "summary.json").write_text(json.dumps({
        "run_id": "r1", "started_at": "2026-11-22T08:00:00+00:00", "finished_at": None,
        "settings": settings.redacted(), "operators": [result.model_dump()], "totals": {}, "error": None}, default=str))
    report = analyse_run(run)
    assert report.retrieval == "similarity" and report.run_id == "r1"
    assert report.curves.iterations == [1, 2, 3]
    assert report.curves.fast_0 == [0.0, 1.0, 1.0] and report.curves.fast_1 == [0.0, 0.0, 1.0]
    assert report.speedup_best_over_first.values == [2.0] and report.speedup_vs_eager.values == [1.8]
    assert report.problems == ["summary.json has no finished_at: the campaign stopped before the end (killed?) and "
                               "nothing runs it now: evokernel run --resume continues it"]


def test_planned_operators_that_never_started_count_as_unsolved(tmp_path):
    run = make_run(tmp_path / "run", ATTEMPTS)
    summary = json.loads((run / "summary.json").read_text())
    summary["planned"] = ["1_Relu", "2_Softmax", "3_Gemm", "5_Pool"]
    (run / "summary.json").write_text(json.dumps(summary))
    report = analyse_run(run)
    assert len(report.operators) == 4
    assert report.curves.fast_0[-1] == pytest.approx(2 / 4)
    assert any("never started: 5_Pool" in p for p in report.problems)


def test_a_running_campaign_has_no_problems_for_operators_not_started_yet(tmp_path):
    from launch.run_lock import RunFolderLock

    run = make_run(tmp_path / "run", ATTEMPTS)
    summary = json.loads((run / "summary.json").read_text())
    summary.update(planned=["1_Relu", "2_Softmax", "3_Gemm", "5_Pool"], finished_at=None, interrupted=False)
    (run / "summary.json").write_text(json.dumps(summary))
    with RunFolderLock(run, "evokernel run r1"):  # the campaign runs: waiting operators are no problem
        report = analyse_run(run)
    assert report.problems == [] and {r.task: r.error for r in report.operators}["5_Pool"] == "no attempt yet"
    report = analyse_run(run)  # nothing runs it any more: a stopped run, its operators never started
    assert any("never started: 5_Pool" in p for p in report.problems)
    assert any("stopped before the end (killed?)" in p for p in report.problems)


def shown(item_id: str, q: float, kind: str = "trace", task: str = "9_Other", role: str = "context") -> dict:
    """One entry of an attempt's `shown` provenance (actors.messages.ShownItem)."""
    return {"id": item_id, "kind": kind, "task": task, "q": q, "role": role}


def test_memory_section_counts_items_in_feasible_contexts_and_traces_their_values(tmp_path):
    # "kernel-a" was in the prompts of both feasible attempts, "lesson-b" of one and of a failure,
    # "lesson-c" only of a failure; Q values as each prompt saw them.
    provenance = [
        attempt("1_Relu", 1, False, shown=[shown("lesson-c", 0.0, "experience"), shown("lesson-b", 0.0, "experience")]),
        attempt("1_Relu", 2, True, 10.0, 0.8, shown=[shown("kernel-a", 0.2), shown("lesson-b", -0.2, "experience")]),
        attempt("2_Softmax", 1, True, 4.0, 2.0, shown=[shown("kernel-a", 0.36, role="example")]),
        attempt("2_Softmax", 2, True, 1.0, 8.0, shown=[shown("start", 0.2, task="2_Softmax", role="start")]),
        attempt("3_Gemm", 1, False),  # recorded before provenance existed: no `shown`
    ]
    run = make_run(tmp_path / "run", provenance)
    memory = analyse_run(run).memory
    assert memory.attempts_with_provenance == 4
    top = [(u.id, u.feasible_attempts, u.attempts) for u in memory.top_items]
    assert top == [("kernel-a", 2, 2), ("lesson-b", 1, 2), ("start", 1, 1), ("lesson-c", 0, 1)]
    assert [(p.attempt, p.stage, p.q) for p in memory.trajectories["kernel-a"]] == [(2, "refine", 0.2),
                                                                                   (3, "draft", 0.36)]
    assert [p.q for p in memory.trajectories["lesson-b"]] == [0.0, -0.2]

    out = tmp_path / "out"
    assert main(["report", str(run), "--out", str(out)]) == 0
    html = (out / "report.html").read_text()
    assert "Memory in the context of feasible attempts" in html and "kernel-a" in html
    assert "<td>+0.200</td>" in html  # first Q of kernel-a
    summary = json.loads((out / "summary.json").read_text())
    figure = summary["figures"][f"q_trajectories ({summary['runs'][0]['label']})"]
    assert matplotlib.image.imread(out / figure).shape[0] > 200
    assert summary["runs"][0]["memory"]["top_items"][0]["id"] == "kernel-a"
