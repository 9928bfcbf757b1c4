"""`evokernel run` when a disk fills mid-run (a small tmpfs of the test's own, filled by the
scripted LLM server at a chosen request): under the run folder and under the bank, the run
stops in one line naming the cause, prints its resume command, leaves no temporary file, and
the resume (space freed) finishes with a summary that agrees with attempts.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launch.cli import main
from tests.actors import replies
from tests.actors.openai_server import OpenAITestServer, ScriptedAgent
from tests.launch.test_run_command import FAST_HARNESS
from tests.memory_actor.small_disk import fill, small_disk

TASKS = "4_ReLU*,13_Sqrt*"


class FillingAgent(ScriptedAgent):
    """Replies without code (nothing to compile); fills DISK when draft request number AT arrives."""

    def __init__(self, disk: Path, at: int):
        super().__init__([replies.GARBAGE] * 8)
        self.disk, self.at, self.filler = disk, at, None

    def __call__(self, body):
        reply = super().__call__(body)
        if self.filler is None and self.kinds.count("draft") == self.at:
            self.filler = fill(self.disk)
        return reply


def run(server: OpenAITestServer, bank: Path, run_dir: Path, *extra: str) -> int:
    # no bundle seeded into the fresh bank: a minute of embedding under load, and no part of the point
    return main([*FAST_HARNESS, "--set", "memory.seed_fresh_bank=false", "run", "--no-ray", "--tasks", TASKS,
                 "--llm-base-url", server.base_url,
                 "--llm-model", server.model, "--memory", str(bank), "--out", str(run_dir), "--backend", "cpu",
                 "--iterations", "2", *extra])


def stop_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(("evokernel run: stopped", "  continue with"))]


def test_a_run_folder_filling_up_stops_the_run_resumably(tmp_path, capsys):
    with small_disk(tmp_path / "disk", size="4m") as disk, OpenAITestServer() as server:
        run_dir = disk / "run"
        server.responder = agent = FillingAgent(disk, at=3)  # the second operator's first draft
        assert run(server, tmp_path / "bank", run_dir) == 1
        assert stop_lines(capsys.readouterr().err) == [
            f"evokernel run: stopped: cannot write the run folder: no space left on device under {run_dir}",
            f"  continue with  evokernel run --no-ray --resume {run_dir}"]
        assert not [p for p in run_dir.rglob("*") if p.name.endswith(".tmp")]
        summary = json.loads((run_dir / "summary.json").read_text())
        assert [op["task"] for op in summary["operators"]] == ["4_ReLU"]  # the last summary that fit

        agent.filler.unlink()
        server.responder = ScriptedAgent([replies.GARBAGE] * 4)
        assert main([*FAST_HARNESS, "run", "--no-ray", "--resume", str(run_dir)]) == 0
        summary = json.loads((run_dir / "summary.json").read_text())
        attempts = [json.loads(line) for line in (run_dir / "attempts.jsonl").read_text().splitlines()]
        assert [op["task"] for op in summary["operators"]] == ["4_ReLU", "13_Sqrt"]
        assert summary["totals"]["attempts"] == len(attempts) == 4
        assert sorted(a["task"] for a in attempts) == ["13_Sqrt", "13_Sqrt", "4_ReLU", "4_ReLU"]


def test_a_bank_filling_up_stops_the_run_with_its_resume_command(tmp_path, capsys):
    with small_disk(tmp_path / "disk", size="8m") as disk, OpenAITestServer() as server:
        bank, run_dir = disk / "bank", tmp_path / "run"
        server.responder = FillingAgent(disk, at=2)
        assert run(server, bank, run_dir) == 1
        err = capsys.readouterr().err
        assert stop_lines(err) == [
            f"evokernel run: stopped: the memory bank cannot be written: no space left on device under {bank} "
            "(free some space there)",
            f"  continue with  evokernel run --no-ray --resume {run_dir}"]
        assert "Traceback" not in err and ".rs:" not in err
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["error"].startswith("the memory bank cannot be written: no space left on device")
    assert [(op["task"], op["stopped_by"]) for op in summary["operators"]] == [("4_ReLU", "infra")]


@pytest.mark.slow
def test_a_bank_filling_up_under_a_ray_campaign_stops_it_instead_of_hanging(tmp_path, capsys):
    # The memory actor retries the failed write for memory.write_give_up_s, then the waiting
    # episode gets the line and the campaign stops (it used to wait at "1 running" for good).
    with small_disk(tmp_path / "disk", size="8m") as disk, OpenAITestServer() as server:
        bank, run_dir = disk / "bank", tmp_path / "run"
        server.responder = FillingAgent(disk, at=2)
        code = main(["--set", "memory.write_give_up_s=3", *FAST_HARNESS, "run", "--tasks", TASKS, "--llm-base-url",
                     server.base_url, "--llm-model", server.model, "--memory", str(bank), "--out", str(run_dir),
                     "--backend", "cpu", "--iterations", "2", "--ray-address", "local", "--max-in-flight", "1"])
        err = capsys.readouterr().err
        assert code == 1, err
        assert stop_lines(err) == [
            f"evokernel run: stopped: the memory bank cannot be written: no space left on device under {bank} "
            "(free some space there)",
            f"  continue with  evokernel run --resume {run_dir}"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [(op["task"], op["stopped_by"]) for op in summary["operators"]] == [("4_ReLU", "infra")]


@pytest.mark.parametrize("mode", [["--no-ray"], []])
def test_a_run_folder_on_a_full_disk_is_one_line(tmp_path, capsys, mode):
    with small_disk(tmp_path / "disk", size="1m") as disk, OpenAITestServer() as server:
        fill(disk)
        run_dir = disk / "run"
        code = main([*FAST_HARNESS, "--set", "memory.seed_fresh_bank=false", "run", *mode, "--tasks", "4_ReLU*",
                     "--llm-base-url", server.base_url,
                     "--llm-model", server.model, "--memory", str(tmp_path / "bank"), "--out", str(run_dir),
                     "--backend", "cpu"])
        err = capsys.readouterr().err
        assert code == 1 and server.chat_requests == []
        # Nothing to resume yet (no summary could be written): the line alone, no resume command.
        assert stop_lines(err) == [f"evokernel run: stopped: cannot write the run folder: no space left on device "
                                   f"under {run_dir}"]
        assert "Traceback" not in err and not [p for p in run_dir.rglob("*") if p.name.endswith(".tmp")]


def test_a_bank_on_a_full_disk_is_one_line_before_anything_starts(tmp_path, capsys):
    from memory_actor.bank import MemoryBank
    from memory_actor.config import MemoryConfig

    with small_disk(tmp_path / "disk", size="4m") as disk, OpenAITestServer() as server:
        MemoryBank(MemoryConfig(uri=str(disk / "old-bank"), preload_embedder=False)).close()
        fill(disk)
        capsys.readouterr()
        for bank in (disk / "new-bank", disk / "old-bank"):
            code = main([*FAST_HARNESS, "run", "--no-ray", "--tasks", "4_ReLU*", "--llm-base-url", server.base_url,
                         "--llm-model", server.model, "--memory", str(bank), "--out", str(tmp_path / bank.name),
                         "--backend", "cpu"])
            err = capsys.readouterr().err.strip().splitlines()
            assert code == 2 and server.chat_requests == []
            assert err == [f"evokernel run: the memory bank cannot be written: no space left on device under {bank} "
                           "(free some space there)"], err


@pytest.mark.slow
def test_a_run_folder_filling_up_under_a_ray_campaign_stops_it_resumably(tmp_path, capsys):
    with small_disk(tmp_path / "disk", size="4m") as disk, OpenAITestServer() as server:
        run_dir = disk / "run"
        server.responder = FillingAgent(disk, at=3)  # the second operator's first draft
        code = main([*FAST_HARNESS, "--set", "memory.seed_fresh_bank=false", "run", "--tasks", TASKS,
                     "--llm-base-url", server.base_url, "--llm-model", server.model, "--memory", str(tmp_path / "bank"),
                     "--out", str(run_dir), "--backend", "cpu", "--iterations", "2", "--ray-address", "local",
                     "--max-in-flight", "1"])
        err = capsys.readouterr().err
        assert code == 1, err
        assert stop_lines(err) == [
            f"evokernel run: stopped: cannot write the run folder: no space left on device under {run_dir}",
            f"  continue with  evokernel run --resume {run_dir}"], err
        assert "Traceback" not in err and not [p for p in run_dir.rglob("*") if p.name.endswith(".tmp")]
