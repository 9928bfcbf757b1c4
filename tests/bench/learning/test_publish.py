"""Where the learning benchmark's tables go (bench/results/), and a published run's raw state:
its archive packed deterministically, unpacked only when its digest holds, and the published v3
tables re-derived from the archives."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from bench.learning.archive import pack, unpack
from bench.learning.cli import main
from bench.learning.publish import drop_interim_publication, publish_folder
from bench.learning.summary import differences, rederived

RESULTS = Path(__file__).resolve().parents[3] / "bench" / "results"
V3_RUNS = ["2026-11-28-qwen2.5-coder-1.5b-instruct-v3-cpu", "2026-11-28-qwen2.5-coder-1.5b-instruct-v3-npu-twin"]
V4_RUNS = ["2026-12-02-qwen2.5-coder-1.5b-instruct-v4-cpu", "2026-12-02-qwen2.5-coder-1.5b-instruct-v4-npu-twin"]
V5_RUNS = ["2026-12-04-qwen2.5-coder-1.5b-instruct-v5-cpu", "2026-12-04-qwen2.5-coder-1.5b-instruct-v5-npu-twin"]
PILOT_RUNS = ["2026-12-03-qwen2.5-coder-1.5b-instruct-pilot-cpu", "2026-12-03-qwen2.5-coder-1.5b-instruct-pilot-npu-twin"]  # bench/learning/pilot.py
V6_RUNS = ["2026-12-06-qwen2.5-coder-1.5b-instruct-v6-cpu", "2026-12-07-qwen2.5-coder-1.5b-instruct-v6-npu-twin"]
PILOT_V6_RUNS = ["2026-12-06-qwen2.5-coder-1.5b-instruct-pilot-v6-cpu", "2026-12-06-qwen2.5-coder-1.5b-instruct-pilot-v6-npu-twin"]  # bench/learning/pilot_v6.py
CLIMB_RUNS = ["2026-12-06-qwen2.5-coder-1.5b-instruct-climb-npu-twin",  # bench/climb.py: the pilot,
              "2026-12-06-qwen2.5-coder-1.5b-instruct-climb-npu-twin-2",  # its rerun with the ub_scalar rung,
              "2026-12-06-qwen2.5-coder-1.5b-instruct-climb-npu-twin-3",  # value with the formula carried in,
              "2026-12-06-qwen2.5-coder-1.5b-instruct-climb-npu-twin-4",  # the merged kernel proposed by the system,
              "2026-12-06-qwen2.5-coder-1.5b-instruct-climb-npu-twin-5"]  # and the vector step by the system


def test_a_second_benchmark_on_the_same_day_publishes_beside_the_first(tmp_path):
    results = tmp_path / "results"
    first = publish_folder(results, "2026-11-22-m", tmp_path / "a")
    assert first == results / "2026-11-22-m"
    first.mkdir(parents=True)
    (first / "summary.json").write_text(json.dumps({"meta": {"results": str(tmp_path / "a")}}))
    assert publish_folder(results, "2026-11-22-m", tmp_path / "a") == first  # republished in place
    assert publish_folder(results, "2026-11-22-m", tmp_path / "b") == results / "2026-11-22-m-2"


def test_a_benchmark_running_past_midnight_republishes_where_it_published_before(tmp_path):
    results = tmp_path / "results"
    for name, out in [("2026-11-23-m-interim", "a"), ("2026-11-23-m", "b")]:
        (results / name).mkdir(parents=True)
        (results / name / "summary.json").write_text(json.dumps({"meta": {"results": str(tmp_path / out)}}))
    assert publish_folder(results, "2026-11-24-m-interim", tmp_path / "a") == results / "2026-11-23-m-interim"
    # the final table of that benchmark is new (dated the day it completes); another benchmark's is not touched
    assert publish_folder(results, "2026-11-24-m", tmp_path / "a") == results / "2026-11-24-m"
    assert publish_folder(results, "2026-11-24-m-interim", tmp_path / "c") == results / "2026-11-24-m-interim"
    drop_interim_publication(results, tmp_path / "a")  # its final table supersedes the interim one
    assert sorted(p.name for p in results.iterdir()) == ["2026-11-23-m"]


def _folder(root: Path) -> Path:
    (root / "arms" / "eval-none-d0" / "report").mkdir(parents=True)
    (root / "arms" / "eval-none-d0" / "report" / "report.html").write_text("<html>derived</html>")
    (root / "arms" / "eval-none-d0" / "attempts.jsonl").write_text('{"task": "4_ReLU", "shown": []}\n')
    (root / "arms" / "eval-none-d0" / "kernels").mkdir()
    (root / "plan.json").write_text("{}\n")
    return root


def test_an_archive_is_the_same_bytes_each_time_and_leaves_the_derived_reports_out(tmp_path):
    folder = _folder(tmp_path / "run")
    first = pack(folder, tmp_path / "a", "runs/run")
    (folder / "plan.json").touch()  # a newer mtime changes nothing
    second = pack(folder, tmp_path / "b", "runs/run")
    assert first["sha256"] == second["sha256"] and first["files"] == 2
    assert (tmp_path / "a" / "raw.tar.xz").read_bytes() == (tmp_path / "b" / "raw.tar.xz").read_bytes()
    with tarfile.open(tmp_path / "a" / "raw.tar.xz") as tar:
        names = tar.getnames()
        assert all(m.mtime == 0 and m.uid == 0 and m.uname == "" for m in tar.getmembers())
    assert "arms/eval-none-d0/kernels" in names and not [n for n in names if "report" in n]
    assert json.loads((tmp_path / "a" / "raw.json").read_text())["sha256"] == first["sha256"]


def test_unpacking_checks_the_digest_and_can_take_only_the_attempts(tmp_path):
    pack(_folder(tmp_path / "run"), tmp_path / "result")
    assert unpack(tmp_path / "result", tmp_path / "some", ["arms/*/attempts.jsonl"]) == [
        "arms/eval-none-d0/attempts.jsonl"]
    assert not (tmp_path / "some" / "plan.json").exists()
    assert sorted(unpack(tmp_path / "result", tmp_path / "all")) == ["arms/eval-none-d0/attempts.jsonl", "plan.json"]
    with pytest.raises(SystemExit, match="not empty"):
        unpack(tmp_path / "result", tmp_path / "all")
    archive = tmp_path / "result" / "raw.tar.xz"
    archive.write_bytes(archive.read_bytes()[:-1] + b"\0")
    with pytest.raises(SystemExit, match="sha256"):
        unpack(tmp_path / "result", tmp_path / "tampered")


def test_every_published_run_keeps_its_raw_state_with_a_digest_that_holds():
    from bench.learning.archive import verified_archive

    kept = sorted(p.parent.name for p in RESULTS.glob("*/raw.json")
                  if not json.loads(p.read_text()).get("in_progress"))  # checkpoints of running benchmarks apart
    assert set(V3_RUNS + V4_RUNS + V5_RUNS + V6_RUNS + PILOT_RUNS + PILOT_V6_RUNS + CLIMB_RUNS) <= set(kept) and len(kept) == 19
    for manifest in RESULTS.glob("*/raw.json"):
        if json.loads(manifest.read_text()).get("in_progress"):  # never read as a result: no table beside it
            assert not (manifest.parent / "summary.json").exists()
            verified_archive(manifest.parent)
    # a guard on the clone's size: a full benchmark run packs to about 0.4 MB (19 archives: 5.6 MB)
    assert sum((RESULTS / name / "raw.tar.xz").stat().st_size for name in kept) < 6_000_000
    for name in kept:
        verified_archive(RESULTS / name)
    for manifest in RESULTS.glob("*/raw.json"):  # the command works from any checkout, wherever it is
        assert json.loads(manifest.read_text())["unpack"] == (
            f"python -m bench.learning unpack bench/results/{manifest.parent.name} --to DIR")


def test_a_folder_inside_the_checkout_is_named_as_the_checkout_names_it(tmp_path):
    from bench.learning.archive import as_named

    assert as_named(RESULTS / "some-run") == Path("bench/results/some-run")
    assert as_named(tmp_path / "run") == tmp_path / "run"
    # a benchmark clone packing into another checkout's bench/results/ names it as that checkout does
    assert as_named(tmp_path / "main" / "bench" / "results" / "run") == Path("bench/results/run")


@pytest.mark.parametrize("run", V3_RUNS + V4_RUNS + V5_RUNS)
def test_the_published_v3_v4_and_v5_tables_are_re_derived_from_the_archive(run):
    """pass@1 per arm and operator, drafts per operator, the paired tests and their p values, the
    verdict, the learning pass's figures and the headline: all of summary.json's figures."""
    published = json.loads((RESULTS / run / "summary.json").read_text())
    again = rederived(RESULTS / run)
    assert differences(again, published) == [] and again["headline"] == published["headline"]
    # and the comparison can fail: a figure changed by hand no longer matches
    published["evaluation"][0]["drafts_by_operator"][published["meta"]["heldout"][0]] += 1
    published["meta"]["curriculum"] = published["meta"]["curriculum"][1:]
    assert differences(again, published) == ["evaluation", "meta.curriculum"]


def test_the_rederive_command_says_whether_the_tables_match(capsys):
    """The documented command, on the smaller of the two archives; v2's tables are refused."""
    assert main(["rederive", str(RESULTS / V3_RUNS[1])]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["match"] and line["differ"] == [] and line["headline"]["pass1_value"] == 0.0625
    with pytest.raises(SystemExit, match="not a table of this design"):
        main(["rederive", str(RESULTS / "2026-11-24-qwen2.5-coder-1.5b-instruct")])


@pytest.mark.slow  # xz -9e of an 11 MB folder: 10 to 30 s on the 2-core machine
def test_publishing_a_complete_run_packs_its_raw_state_beside_the_table(tmp_path, monkeypatch):
    """--publish of a complete folder (here the published npu-twin run, unpacked) writes the
    table and the archive of the folder into bench/results/<date>-<model>-v3-<backend>/."""
    import bench.learning.summary as summary
    from bench.learning.plan import plan_in

    out = tmp_path / "run"
    unpack(RESULTS / V3_RUNS[1], out)
    monkeypatch.setattr(summary, "REPOSITORY", tmp_path / "repo")
    line = summary.summarise(out, plan_in(out), {"name": "m"}, publish=True)
    [target] = (tmp_path / "repo" / "bench" / "results").iterdir()
    assert target.name.endswith("-m-v3-npu-twin") and line["pass1_value"] == 0.0625
    assert json.loads((target / "summary.json").read_text())["meta"]["complete"]
    files = unpack(target, tmp_path / "again")
    assert "summary.json" in files and "arms/eval-value-d7/attempts.jsonl" in files
    assert json.loads((target / "raw.json").read_text())["from"] == str(out)  # outside the repository: absolute


def test_a_pilots_table_is_published_with_its_raw_state_and_republished_in_place(tmp_path, monkeypatch):
    """bench.learning.archive.publish_table (the climb pilot's and the v6 pilot's --publish): the
    table's two files copied, the folder packed beside them, and a second publish of the same
    folder (interim -> more rows) lands in the same place."""
    import bench.learning.archive as archive

    out = tmp_path / "runs" / "climb"
    (out / "banks").mkdir(parents=True)
    (out / "banks" / "none-s0.txt").write_text("a bank")
    (out / "summary.md").write_text("# table\n")
    (out / "summary.json").write_text(json.dumps({"meta": {"results": str(out)}, "rows": 1}))
    monkeypatch.setattr(archive, "REPOSITORY", tmp_path / "repo")
    meta = {"date": "2026-12-06T15:00:00+00:00", "model": {"name": "org/model"}}
    target = archive.publish_table(out, meta, "climb-npu-twin")
    assert target == tmp_path / "repo" / "bench" / "results" / "2026-12-06-org_model-climb-npu-twin"
    assert (target / "summary.md").read_text() == "# table\n"
    assert sorted(unpack(target, tmp_path / "again")) == ["banks/none-s0.txt", "summary.json", "summary.md"]
    (out / "summary.json").write_text(json.dumps({"meta": {"results": str(out)}, "rows": 2}))
    meta["date"] = "2026-12-07T01:00:00+00:00"  # past midnight: the same folder, not a new one
    assert archive.publish_table(out, meta, "climb-npu-twin") == target
    assert json.loads((target / "summary.json").read_text())["rows"] == 2
