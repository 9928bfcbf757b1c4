"""One process writes a run folder at a time (launch.run_lock): a second resume of a folder in
use is refused in one line before it touches the folder or the bank, a resume keeps its run's
bank, and the advice for a bank in use never sends a resume to another bank."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

from launch.cli import main
from launch.run_lock import RunFolderInUse, RunFolderLock
from tests.actors import replies
from tests.actors.openai_server import OpenAITestServer, ScriptedAgent
from tests.launch.test_run_command import FAST_HARNESS

REPO = Path(__file__).resolve().parents[2]
HOLDER = """
import sys
from pathlib import Path
from launch.run_lock import RunFolderLock
lock = RunFolderLock(Path(sys.argv[1]), "evokernel run --resume (the first)").acquire()
print("holding", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def folder_holder(run_dir: Path):
    """Another process that holds the run folder (a first resume still running) until the block ends."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(run_dir)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert process.stdout.readline().strip() == "holding"
        yield process
    finally:
        process.stdin.close()
        process.wait(30)


def test_the_lock_names_its_holder_and_is_free_again_once_released(tmp_path):
    with RunFolderLock(tmp_path / "run", "evokernel run abc"):
        with pytest.raises(RunFolderInUse) as refused:
            RunFolderLock(tmp_path / "run", "evokernel run --resume").acquire()
        assert "is in use by evokernel run abc (host " in str(refused.value)
    with RunFolderLock(tmp_path / "run", "evokernel run --resume"):
        pass


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory):
    """A finished single-process run folder (one operator) and its bank, shared: every test
    here is refused and changes nothing (the first one checks that)."""
    folder = tmp_path_factory.mktemp("stopped")
    with OpenAITestServer() as server:
        server.responder = ScriptedAgent([replies.GARBAGE])  # no code: nothing to compile
        assert main([*FAST_HARNESS, "--set", "memory.seed_fresh_bank=false", "run", "--no-ray", "--tasks", "4_ReLU*",
                     "--llm-base-url", server.base_url, "--llm-model", server.model, "--memory", str(folder / "bank"),
                     "--out", str(folder / "run"), "--backend", "cpu", "--iterations", "1"]) == 0
    return folder / "run"


def resume(run_dir: Path, *extra: str) -> int:
    return main([*FAST_HARNESS, "run", "--no-ray", "--resume", str(run_dir), "--llm-base-url",
                 "http://127.0.0.1:9/v1", *extra])


def test_a_second_resume_of_a_folder_in_use_is_refused_and_changes_nothing(stopped_run, capsys):
    before = {p.name: p.read_bytes() for p in stopped_run.iterdir() if p.is_file() and p.name != "run.lock"}
    bank_files = sorted(str(p) for p in (stopped_run.parent / "bank").rglob("*"))
    with folder_holder(stopped_run) as first:
        assert resume(stopped_run, "--memory", str(stopped_run.parent / "other-bank")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"evokernel run: the run folder {stopped_run} is in use by evokernel run --resume (the first) "
                   f"(host {err[0].split('(host ')[1].split(',')[0]}, pid {first.pid}, "
                   f"since {err[0].split('since ')[1].split(')')[0]}): one process writes a run folder at a time; "
                   f"let it finish (or stop it), then continue with `evokernel run --resume {stopped_run}`"]
    after = {p.name: p.read_bytes() for p in stopped_run.iterdir() if p.is_file() and p.name != "run.lock"}
    assert after == before and not (stopped_run.parent / "other-bank").exists()
    assert sorted(str(p) for p in (stopped_run.parent / "bank").rglob("*")) == bank_files


def test_a_resume_keeps_its_runs_bank(stopped_run, capsys):
    assert resume(stopped_run, "--memory", str(stopped_run.parent / "other-bank")) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"evokernel run: {stopped_run} learned into the memory bank {stopped_run.parent / 'bank'}: a resume continues with it "
        f"(leave out --memory), or start a new run with --memory {stopped_run.parent / 'other-bank'}"]
    assert not (stopped_run.parent / "other-bank").exists()


def test_a_resume_whose_bank_is_in_use_is_told_to_wait_not_to_switch_banks(stopped_run, capsys):
    from tests.memory_actor.test_lease import holder

    with holder(str(stopped_run.parent / "bank")):
        assert resume(stopped_run) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "is in use by evokernel run holder-run" in line and "--memory" not in line
    assert line.endswith(f": wait for it to finish, then `evokernel run --resume {stopped_run}` again")
