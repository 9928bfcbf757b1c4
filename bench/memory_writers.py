"""Writers of the memory benchmark (bench/memory.py): two campaigns on one bank, and the check
that every acknowledged value update was applied (a serial replay in the bank's order)."""

from __future__ import annotations

import multiprocessing
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
import ray
from pydantic import BaseModel

from bench.memory_bank_build import build_synthetic_bank
from memory_actor.actor_handle import get_or_create_memory_actor
from memory_actor.bank import MemoryBank
from memory_actor.config import MemoryConfig
from memory_actor.disk.lease import BankInUse
from memory_actor.index import STAGE_ROW
from memory_actor.messages import ValueUpdate
from memory_actor.values import RewardShaper, q_update


def reopen(config: MemoryConfig, wait_s: float = 60.0) -> MemoryBank:
    """The bank in this process once the killed actor's process has let go of its writer lease."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return MemoryBank(config)
        except BankInUse:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _try_to_write(config: MemoryConfig) -> str:
    """In another process: open the bank to write; why that was refused ('' when it was not)."""
    try:
        MemoryBank(config).close()
    except BankInUse as exc:
        return str(exc)
    return ""


class TwoWriterResult(BaseModel):
    """Two campaigns on one bank: the second writer is refused while the first writes, then
    writes after it; the bank must hold every update of both, each item once."""

    second_writer_refused: bool
    refusal: str
    updates: int
    lost_updates: int
    value_mismatches: int
    duplicate_items: int
    seq_unique: bool


def run_two_writers(items: int = 1000, updates: int = 500, seed: int = 0) -> TwoWriterResult:
    """Needs Ray. Writer A (a memory actor) takes the bank; another process that tries to write it
    meanwhile is refused; A sends half the updates and ends, then writer B (a memory actor in
    another process) sends the rest."""
    uri = tempfile.mkdtemp(prefix="evokernel-bench-two-writers-")
    try:
        ids = build_synthetic_bank(uri, items, seed)
        rng = np.random.default_rng(seed + 2)
        stream = [ValueUpdate(shown_ids=[ids[j] for j in rng.choice(len(ids), size=3, replace=False)],
                              stage="refine" if k % 3 == 0 else "draft", reward=float(rng.uniform(-1, 1)))
                  for k in range(updates)]
        config = MemoryConfig(uri=uri, seed=seed, preload_embedder=False)

        def writer(name: str) -> Any:
            actor = get_or_create_memory_actor(config.model_copy(update={"actor_name": f"{name}-{time.time_ns()}"}),
                                               owner=name)
            return actor, actor.pid.remote()

        first, ready = writer("campaign-a")
        ray.get(ready)
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as other:
            refusal = other.submit(_try_to_write, config).result()  # a second campaign's process
        half = len(stream) // 2
        acks = ray.get([first.update.remote(update) for update in stream[:half]])
        ray.kill(first)
        reopen(config).close()  # A's lease is gone: B may start
        second, ready = writer("campaign-b")
        ray.get(ready)
        acks += ray.get([second.update.remote(update) for update in stream[half:]])
        ray.get(second.flush.remote())
        ray.kill(second)
        bank = reopen(config)
        lost, mismatches = compare_with_serial_replay(bank, stream, acks, config)
        table_ids = bank.items_table().column("id").to_pylist()
        seqs = bank.store.read_log().column("seq").to_pylist()
        bank.close()
        return TwoWriterResult(second_writer_refused=bool(refusal), refusal=refusal, updates=len(stream),
                               lost_updates=lost, value_mismatches=mismatches,
                               duplicate_items=len(table_ids) - len(set(table_ids)), seq_unique=len(seqs) == len(set(seqs)))
    finally:
        shutil.rmtree(uri, ignore_errors=True)


def compare_with_serial_replay(bank: MemoryBank, stream: list[ValueUpdate], acks: list,
                                config: MemoryConfig) -> tuple[int, int]:
    """Replay the stream one update at a time in the bank's order; count missing applications
    (lost updates) and items whose value differs from the replay."""
    order = sorted(range(len(stream)), key=lambda k: acks[k].seq)
    expected_q: dict[tuple[str, str], float] = {}
    expected_visits: dict[tuple[str, str], int] = {}
    shaper = RewardShaper(config)
    for k in order:
        update = stream[k]
        _, advantage = shaper.shape(update.stage, update.reward)
        for item_id in update.shown_ids or []:
            key = (item_id, update.stage)
            expected_q[key] = q_update(expected_q.get(key, 0.0), advantage, config.alpha)  # built with Q 0
            expected_visits[key] = expected_visits.get(key, 0) + 1
    lost = mismatches = 0
    for (item_id, stage), q in expected_q.items():
        row = bank.index.row_of[item_id]  # the values alone (a large bank would read each item's text from disk)
        visits, value = int(bank.index.visits[STAGE_ROW[stage], row]), float(bank.index.q[STAGE_ROW[stage], row])
        lost += max(0, expected_visits[(item_id, stage)] - visits)
        mismatches += int(abs(value - q) > 1e-9)
    return lost, mismatches

