"""One bank, several campaigns; a killed run resumed: separate `evokernel run` processes (each
starting its own local Ray or running in one process), a scripted LLM on loopback, a real bank.
The bank must hold every acknowledged update exactly once, each item once, and nothing of the
attempts a resumed run threw away."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from memory_actor.bank import MemoryBank
from memory_actor.config import MemoryConfig
from memory_actor.disk.lease import LOCK_FILE
from memory_actor.retraction import RETRACT, update_rows
from tests.actors import replies
from tests.actors.openai_server import OpenAITestServer, Reply, ScriptedAgent

REPO = Path(__file__).resolve().parents[2]
HARNESS = ["--set", "harness.compile_baseline=false", "--set", "harness.timed_trials=5",
           "--set", "harness.warmup_trials=1", "--set", "harness.correctness_trials=2",
           "--set", "harness.profile_input_sets=1", "--set", "llm.candidate_format=kernel",
           "--set", "episode.lessons=false"]


def evokernel(server: OpenAITestServer, bank: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "launch.cli", *HARNESS, "run", "--tasks", "4_ReLU*", "--llm-base-url", server.base_url,
         "--llm-model", server.model, "--memory", str(bank), "--out", str(out), "--backend", "cpu", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, start_new_session=True)


def wait_until(condition, timeout_s: float = 300, process: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if process is not None and process.poll() is not None:
            pytest.fail(f"the run ended early: {process.communicate()[1][-3000:]}")
        assert time.monotonic() < deadline, "timed out"  # liveness only (5 min by default): no speed claimed
        time.sleep(0.2)


def rewarded(run_dir: Path) -> list[dict]:
    path = run_dir / "attempts.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [a for a in map(json.loads, lines) if a["reward"] is not None and a["shown"]]


def standing_rows(bank: Path) -> list[dict]:
    """The update rows (in the log, or folded into the history table) that were not taken back."""
    store = MemoryBank(MemoryConfig(uri=str(bank), preload_embedder=False), read_only=True).store
    rows = update_rows(store)
    taken_back = {row["ref_id"][len(RETRACT) + 1:] for row in rows if row["type"] == RETRACT}
    return [row for row in rows if row["type"] == "update" and row["ref_id"] not in taken_back]


def standing_updates(bank: Path) -> Counter:
    """Update ids not taken back, counted (a duplicate would count 2)."""
    return Counter(row["ref_id"] for row in standing_rows(bank))


def check_bank(bank: Path, runs: dict[str, Path]) -> None:
    """Every acknowledged update (a rewarded attempt of a run folder) counted once and nothing
    else; the update rows (in the log or the history) each once and of these runs; unique
    sequence numbers; every item stored once; each item's draft visits are the standing updates
    that showed it (a taken-back update's visits are gone)."""
    opened = MemoryBank(MemoryConfig(uri=str(bank), preload_embedder=False), read_only=True)
    for table in (opened.store.read_log(), opened.store.read_history()):
        seqs = table.column("seq").to_pylist()
        assert len(seqs) == len(set(seqs))
    ids = opened.items_table().column("id").to_pylist()
    assert len(ids) == len(set(ids)) == len(opened.items)
    standing = standing_updates(bank)
    assert all(count == 1 for count in standing.values())
    assert all(ref.split("/", 1)[0] in runs for ref in standing)
    expected = {run_id: len(rewarded(run_dir)) for run_id, run_dir in runs.items()}
    assert all(expected.values()) and opened.stats().updates == sum(expected.values()), expected
    assert sum(standing.values()) == sum(expected.values())
    shown = Counter(item_id for row in standing_rows(bank) if row["stage"] == "draft"
                    for item_id in row["item_ids"][:row["shown"]])
    assert {item_id: opened.get(item_id).visits_draft for item_id in opened.items
            if opened.get(item_id).visits_draft} == dict(shown)


@pytest.mark.slow
def test_two_campaigns_on_one_bank_lose_nothing(tmp_path):
    bank = tmp_path / "bank"
    with OpenAITestServer() as server:
        # The first campaign's draft waits on the LLM long enough for the second to start.
        server.responder = ScriptedAgent([Reply(replies.FAST, delay_s=20), replies.FAST])
        first = evokernel(server, bank, tmp_path / "a", "--iterations", "1")
        lease = bank / LOCK_FILE
        wait_until(lambda: server.chat_requests and lease.exists() and "evokernel run" in lease.read_text(),
                   process=first)
        holder = json.loads(lease.read_text())
        second = evokernel(server, bank, tmp_path / "b", "--iterations", "1")
        _, err = second.communicate(timeout=300)
        assert second.returncode == 2, err[-3000:]
        [line] = err.strip().splitlines()
        assert f"is in use by {holder['owner']}" in line and f"pid {holder['pid']}" in line
        assert not (tmp_path / "b").exists()  # refused before anything started
        _, err = first.communicate(timeout=600)
        assert first.returncode == 0, err[-3000:]
        again = evokernel(server, bank, tmp_path / "b", "--iterations", "1")  # after the first: welcome
        _, err = again.communicate(timeout=600)
        assert again.returncode == 0, err[-3000:]
    runs = {json.loads((tmp_path / r / "summary.json").read_text())["run_id"]: tmp_path / r for r in ("a", "b")}
    check_bank(bank, runs)


@pytest.mark.slow
@pytest.mark.parametrize("closed_between", [False, True], ids=["resumed", "closed-then-resumed"])
def test_resume_after_a_kill_takes_back_what_it_redoes(tmp_path, closed_between):
    bank, run_dir = tmp_path / "bank", tmp_path / "run"
    with OpenAITestServer() as server:
        # Two failed drafts (two -1 rewards to what they were shown), then the LLM hangs: kill -9.
        server.responder = ScriptedAgent([replies.BROKEN, replies.WRONG, Reply(replies.FAST, delay_s=60)])
        run = evokernel(server, bank, run_dir, "--no-ray", "--iterations", "3")
        wait_until(lambda: len(rewarded(run_dir)) == 2 and len(server.chat_requests) >= 3, process=run)
        os.killpg(run.pid, signal.SIGKILL)
        run.communicate(timeout=60)
        run_id = json.loads((run_dir / "summary.json").read_text())["run_id"]
        assert len([ref for ref in standing_updates(bank) if ref.startswith(run_id)]) == 2  # in the bank
        if closed_between:  # opened and closed by a writer (`memory seed`, another run): the log is folded
            MemoryBank(MemoryConfig(uri=str(bank), preload_embedder=False), owner="evokernel memory").close()
            folded = MemoryBank(MemoryConfig(uri=str(bank), preload_embedder=False), read_only=True).store
            assert not [row for row in folded.read_log().to_pylist() if row["type"] == "update"]

        server.responder = ScriptedAgent([replies.FAST, replies.FAST])
        resumed = subprocess.run(
            [sys.executable, "-m", "launch.cli", "run", "--no-ray", "--resume", str(run_dir), "--iterations", "1",
             "--llm-base-url", server.base_url], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "took back 2 value update(s)" in resumed.stderr
    assert len((run_dir / "attempts.discarded.jsonl").read_text().splitlines()) == 2
    check_bank(bank, {run_id: run_dir})  # only the kept attempt's update stands


class HeldDraft(ScriptedAgent):
    """Holds its first draft request until `release` is set (the server's loop waits with it)."""

    def __init__(self, release: threading.Event):
        super().__init__([replies.FAST])
        self.release = release

    def __call__(self, body: dict) -> Reply:
        reply = super().__call__(body)
        if self.kinds[-1] == "draft":
            self.release.wait(900)
        return reply


@pytest.mark.slow
def test_two_campaigns_with_their_own_banks_share_a_cluster(tmp_path):
    # One Ray cluster both runs join; each campaign in its own Ray namespace (its device actors
    # are named per namespace), the memory actors in one shared namespace: one actor per bank.
    from ray.cluster_utils import Cluster

    from tests.launch.local_ports import head_node_args

    cluster = Cluster(initialize_head=True, connect=False, head_node_args=head_node_args(num_cpus=4))
    shared = ["--ray-address", cluster.address, "--set", "memory.actor_namespace=evokernel-memories",
              "--set", "ray.devices=1", "--set", "llm.timeout_s=900", "--iterations", "1"]
    release = threading.Event()
    try:
        with OpenAITestServer() as server_a, OpenAITestServer() as server_b:
            server_a.responder, server_b.responder = HeldDraft(release), ScriptedAgent([replies.FAST])
            try:
                first = evokernel(server_a, tmp_path / "bank-a", tmp_path / "a", *shared,
                                  "--set", "ray.namespace=run-a")
                wait_until(lambda: server_a.chat_requests, process=first)  # its memory actor serves it
                second = evokernel(server_b, tmp_path / "bank-b", tmp_path / "b", *shared,
                                   "--set", "ray.namespace=run-b")
                # The second drafts (its own memory actor serves it) while the first waits for its reply.
                wait_until(lambda: server_b.chat_requests, process=second)
                assert first.poll() is None
            finally:
                release.set()  # the first server's loop waits with the held draft
            for run in (first, second):
                _, err = run.communicate(timeout=600)
                assert run.returncode == 0, err[-3000:]
    finally:
        cluster.shutdown()
    for name in ("a", "b"):
        run_id = json.loads((tmp_path / name / "summary.json").read_text())["run_id"]
        check_bank(tmp_path / f"bank-{name}", {run_id: tmp_path / name})  # each bank learned from its own run
