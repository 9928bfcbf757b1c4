"""The machine's speed in each session of the time-budget benchmark (bench/budget_probe.py): read from
the drafts that failed to compile, the probe taken before a session, and the budget row's share of the
full row's work once the two rows ran at different speeds. The probe itself runs the bundled model
(slow; skipped where the local-llm extra or the model is missing)."""

from __future__ import annotations

import importlib.util
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench import budget_probe


def stamp(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def draft(end: float, wall: float, tokens: int, category: str = "compile_error") -> dict:
    return {"task": "t", "category": category, "wall_s": wall, "tokens_completion": tokens, "timestamp": stamp(end)}


def write(out: Path, segments: dict, attempts: dict[str, list[dict]], probes: list[dict] = ()) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "segments.json").write_text(json.dumps(segments))
    if probes:
        (out / "probes.json").write_text(json.dumps(list(probes)))
    for row, rows in attempts.items():
        (out / row).mkdir(exist_ok=True)
        (out / row / "attempts.jsonl").write_text("".join(json.dumps(a) + "\n" for a in rows))


def rows(out: Path) -> dict[str, list[dict]]:
    return {row: budget_probe.sessions(out, row) for row in ("full", "budget", "stops")}


T0 = 1_700_000_000.0  # in the past: a running session ends now


def test_each_session_reads_its_own_drafts_speed_and_the_probe_taken_just_before_it(tmp_path):
    out = tmp_path / "bench"
    segments = {"full": [{"start": T0, "end": T0 + 3600, "commit": "abc1234def", "load1": [2.0, 3.0, 4.0]},
                         {"start": T0 + 7200, "end": T0 + 9000, "commit": "abc1234def", "load1": [3.0]}]}
    attempts = {"full": [draft(T0 + 100, 30.0, 300), draft(T0 + 200, 20.0, 200), draft(T0 + 300, 50.0, 100,
                                                                                            "mismatch"),
                         draft(T0 + 7300, 39.0, 300), draft(T0 + 7400, 26.0, 200), draft(T0 + 7500, 13.0, 100)]}
    probe = {"at": stamp(T0 + 7200 - 120), "prompt_tok_s": 90.0, "generate_tok_s": 8.0, "cpu": "AMD EPYC"}
    stale = {"at": stamp(T0 - 3 * 3600), "prompt_tok_s": 120.0, "generate_tok_s": 11.0, "cpu": "AMD EPYC"}
    write(out, segments, attempts, [stale, probe])
    first, second = budget_probe.sessions(out, "full")
    assert (first["s_per_token"], first["compile_error_drafts"], first["attempts"]) == (0.1, 2, 3)
    assert first["attempts_wall_s"] == 100.0 and first["load1_median"] == 3.0 and first["commit"] == "abc1234"
    assert first["probe"] is None  # the stale probe was hours before it, the next one an hour after its end
    assert second["s_per_token"] == 0.13 and second["probe"]["generate_tok_s"] == 8.0
    # a probe taken after a session ended (a pause, then the probe) counts for it when none preceded it
    after = {"at": stamp(T0 + 3600 + 60), "prompt_tok_s": 100.0, "generate_tok_s": 10.0, "cpu": "AMD EPYC"}
    write(out, segments, attempts, [stale, after, probe])
    first, second = budget_probe.sessions(out, "full")
    assert first["probe"]["generate_tok_s"] == 10.0 and second["probe"]["generate_tok_s"] == 8.0


def test_the_sessions_table_names_each_session_s_machine_and_its_cache_flush(tmp_path):
    """A session on a processor with a 480 MiB L3 flushed 960 MiB before every timed call until the flush
    was capped (c1bb7f8): the table shows each session's flush beside its speed, '-' before it was kept."""
    from bench.budget_table import sessions_lines

    out = tmp_path / "bench"
    segments = {"full": [{"start": T0, "end": T0 + 3600, "commit": "abc1234def"},
                         {"start": T0 + 7200, "end": T0 + 9000, "commit": "e380811abc"}]}
    old = {"at": stamp(T0 - 60), "prompt_tok_s": 35.1, "generate_tok_s": 14.56, "cpu": "AMD EPYC (avx2)"}
    new = {"at": stamp(T0 + 7200 - 60), "prompt_tok_s": 79.0, "generate_tok_s": 11.56,
           "cpu": "Intel(R) Xeon(R) Processor (avx512f)", "cache_flush_mib": 128}
    write(out, segments, {"full": [draft(T0 + 100, 30.0, 300), draft(T0 + 7300, 39.0, 300)]}, [old, new])
    lines = sessions_lines(rows(out), {"budget_share_speed_adjusted": 0.31})
    first, second = (line for line in lines if line.startswith("| full |"))
    assert first.endswith("| 35.1 | 14.56 | AMD EPYC (avx2) | - |") and "| abc1234 |" in first
    assert second.endswith("| 79.0 | 11.56 | Intel(R) Xeon(R) Processor (avx512f) | 128 |") and "| e380811 |" in second
    assert lines[-1] == "The budget row's hours as a share of the full row's work at the budget row's speed: 0.31 (nominal 0.333)."


def test_the_budget_share_is_rescaled_by_the_two_rows_speeds(tmp_path):
    out = tmp_path / "bench"
    segments = {"full": [{"start": T0, "end": T0 + 3600}, {"start": T0 + 7200, "end": T0 + 9000}],
                "budget": [{"start": T0 + 20000, "end": T0 + 21000}]}
    # full: 0.1 s/token over 60 s of attempts, then 0.2 over 60 s: 0.15 weighted; budget: 0.075 (twice full's speed)
    attempts = {"full": [draft(T0 + 100, 30.0, 300), draft(T0 + 200, 30.0, 300),
                         draft(T0 + 7300, 60.0, 300)],
                "budget": [draft(T0 + 20100, 15.0, 200)]}
    write(out, segments, attempts)
    adjusted = budget_probe.speed_adjusted_share(rows(out), budget_hours=1.0, full_wall_s=3 * 3600)
    assert adjusted["full_s_per_token"] == 0.15 and adjusted["budget_s_per_token"] == 0.075
    # the full row's 3 h of work would take 1.5 h at the budget row's speed: 1 h is two thirds of it
    assert adjusted["share"] == pytest.approx(0.667, abs=1e-3)
    assert budget_probe.speed_adjusted_share(rows(out), 1.0, 0.0) is None


def test_a_session_with_no_compile_errors_has_no_speed_reading(tmp_path):
    out = tmp_path / "bench"
    write(out, {"stops": [{"start": T0, "end": None}]}, {"stops": [draft(T0 + 10, 40.0, 100, "mismatch")]})
    (session,) = budget_probe.sessions(out, "stops")
    assert session["s_per_token"] is None and session["attempts"] == 1
    assert budget_probe.speed_adjusted_share(rows(out), 1.0, 3600.0) is None


MODEL = budget_probe.default_cache_dir() / budget_probe.QWEN25_CODER_15B.file_name


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None or not MODEL.is_file(),
                    reason="needs the local-llm extra and the fetched model (bash scripts/setup.sh local-llm)")
def test_the_probe_measures_the_bundled_model_and_appends_to_probes_json(tmp_path, capsys):
    out = tmp_path / "bench"
    for _ in range(2):
        assert budget_probe.main(["--out", str(out)]) == 0
    probes = json.loads((out / "probes.json").read_text())
    assert len(probes) == 2
    for probe in probes:
        assert probe["prompt_tokens"] >= budget_probe.PROMPT_TOKENS - 5
        assert probe["generated_tokens"] > 1 and probe["prompt_tok_s"] > 0 and probe["generate_tok_s"] > 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["bench"] == "budget_probe"
