"""summary.json as one model (launch.run_summary.RunSummary): written, read back, refused when wrong."""

from __future__ import annotations

import json

import pytest

from actors.messages import EpisodeResult
from launch.campaign import Campaign
from launch.config import load_settings
from launch.run_summary import RunSummary, RunSummaryError, Totals


def test_totals_are_computed_from_the_operators_and_written_with_them(tmp_path):
    operators = [EpisodeResult(task="1_A", feasible=True, attempts=3, tokens=100, speedup_vs_eager=2.0,
                               speedup_best_over_first=1.5),
                 EpisodeResult(task="2_B", feasible=True, attempts=2, tokens=50, speedup_vs_eager=4.0),
                 EpisodeResult(task="3_C", attempts=1, tokens=10, stopped_by="interrupted", error="interrupted")]
    summary = RunSummary(run_id="r1", started_at="2026-01-01T00:00:00+00:00", mode="ray", operators=operators,
                         planned=["1_A", "2_B", "3_C"], interrupted=True)
    summary.write(tmp_path)
    written = json.loads((tmp_path / "summary.json").read_text())
    # The interrupted operator is no error: a resume runs it again.
    assert written["totals"] == {"operators": 3, "feasible": 2, "feasible_rate": 0.6667, "attempts": 6, "tokens": 160,
                                 "errors": 0, "median_speedup_vs_eager": 3.0, "median_speedup_best_over_first": 1.5}
    assert written["placement"] == {"episodes": {}, "devices": []} and written["interrupted"] is True
    assert not list(tmp_path.glob("*.tmp"))
    again = RunSummary.load(tmp_path)
    assert again == summary and again.totals == Totals.of(operators)


def test_a_summary_that_is_not_one_is_refused_with_where_it_is_wrong(tmp_path):
    with pytest.raises(RunSummaryError, match="cannot read"):
        RunSummary.load(tmp_path)
    (tmp_path / "summary.json").write_text('{"run_id": "r1", "operators": [{"feasible": true}')
    with pytest.raises(RunSummaryError, match="not a run summary: the file: Invalid JSON"):
        RunSummary.load(tmp_path)
    (tmp_path / "summary.json").write_text('{"run_id": "r1", "mode": "threads", "operators": [{"feasible": true}]}')
    with pytest.raises(RunSummaryError, match=r"not a run summary: mode: .* \(and 1 more\)"):
        RunSummary.load(tmp_path)


def test_the_single_process_campaign_writes_the_same_model_with_its_plan(tmp_path):
    settings = load_settings(None, {"llm": {"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-secret"}})
    campaign = Campaign(settings, tmp_path / "run", run_id="r2")
    campaign.planned = [tmp_path / "suite" / "4_ReLU.py"]
    campaign.operators = [EpisodeResult(task="4_ReLU", feasible=True, attempts=1)]
    campaign.folder.write_summary(campaign.summary(False))
    summary = RunSummary.load(tmp_path / "run")
    assert summary.mode == "single-process" and summary.finished_at is None and not summary.interrupted
    assert summary.planned == ["4_ReLU"] and summary.planned_paths == [str(tmp_path / "suite" / "4_ReLU.py")]
    assert summary.totals.feasible == 1 and summary.settings["llm"]["api_key"] == "**********"
    assert "sk-secret" not in (tmp_path / "run" / "summary.json").read_text()


def test_an_operator_with_a_kernel_then_an_endpoint_fault_is_feasible_not_also_failed():
    from launch.metrics import CampaignCounters

    counters = CampaignCounters(planned=3)
    for result in (EpisodeResult(task="1_A", feasible=True, stopped_by="infra", error="LLM endpoint fault: HTTP 500"),
                   EpisodeResult(task="2_B", stopped_by="infra", error="LLM endpoint fault: HTTP 500"),
                   EpisodeResult(task="3_C", stopped_by="interrupted", error="interrupted")):
        counters.add_result(result)
    assert (counters.done, counters.feasible, counters.failed, counters.interrupted) == (2, 1, 1, 1)
    assert "2/3 done (0 running, 1 interrupted) | 1 feasible, 1 failed |" in counters.line()
    counters.add_result(EpisodeResult(task="4_D", feasible=True, stopped_by="interrupted", error="interrupted"))
    # issue 55: one cut short with a kernel is said apart, as the final table counts it feasible
    assert "2/3 done (0 running, 2 interrupted) | 1 feasible (+1 interrupted), 1 failed |" in counters.line()
    assert Totals.of([EpisodeResult(task="1_A", feasible=True, stopped_by="infra", error="LLM endpoint fault"),
                      EpisodeResult(task="3_C", stopped_by="interrupted", error="interrupted")]).errors == 1
