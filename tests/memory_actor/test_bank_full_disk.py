"""A full disk under the bank: one line naming the cause and the bank, never a traceback or an
endless retry. A bank opened on a disk already full is refused in one line; a disk that fills
under a running memory actor fails the callers waiting for an acknowledgement after
memory.write_give_up_s, and every later write at once, and the lease still goes back."""

from __future__ import annotations

import time

import pytest
import ray

from memory_actor.actor_handle import get_or_create_memory_actor
from memory_actor.bank import MemoryBank
from memory_actor.disk.bank_errors import BankWriteFailed
from memory_actor.disk.lease import probe
from memory_actor.items import MemoryItem
from memory_actor.messages import RetrievalRequest, ValueUpdate
from tests.memory_actor.conftest import unit_vectors
from tests.memory_actor.small_disk import fill, small_disk


def items(count: int, seed: int = 0) -> list[MemoryItem]:
    return [MemoryItem(kind="experience", backend="cpu", content=f"lesson {i}", summary=f"lesson {i}",
                       embedding=vector.tolist()) for i, vector in enumerate(unit_vectors(count, seed))]


def full_line(bank: str) -> str:
    return f"the memory bank cannot be written: no space left on device under {bank}"


def test_a_bank_on_a_disk_already_full_is_one_line(tmp_path, memory_config):
    with small_disk(tmp_path / "disk") as disk:
        fill(disk)
        for where in ("new-bank", "bank"):  # a bank to create there, and one made before the disk filled
            config = memory_config(uri=str(disk / where))
            if where == "bank":
                (disk / "filler").unlink()
                MemoryBank(config).close()
                fill(disk)
            with pytest.raises(BankWriteFailed) as refused:
                bank = MemoryBank(config)
                bank.add(items(3))
            assert str(refused.value).startswith(full_line(config.uri)), refused.value
            assert "\n" not in str(refused.value) and ".rs:" not in str(refused.value)
        (disk / "filler").unlink()
        probe(config.uri)  # nobody holds the bank: the failed opening gave its lock back


def test_a_disk_filling_under_the_actor_fails_the_waiters_then_every_write(tmp_path, ray_cluster, memory_config):
    with small_disk(tmp_path / "disk", size="8m") as disk:
        config = memory_config(uri=str(disk / "bank"), write_give_up_s=3.0, fold_every_rows=10_000,
                               fold_every_flushes=10_000)
        actor = get_or_create_memory_actor(config)
        try:
            ids = ray.get(actor.add.remote(items(5)))
            vector = unit_vectors(1, seed=7)[0].tolist()
            retrieval = ray.get(actor.retrieve.remote(RetrievalRequest(query="q", query_embedding=vector,
                                                                       stage="draft", backend="cpu")))
            assert ray.get(actor.update.remote(ValueUpdate(update_id="before", retrieval_id=retrieval.retrieval_id,
                                                           shown_ids=ids[:2], stage="draft", reward=1.0))).durable
            filler = fill(disk)
            started = time.monotonic()
            with pytest.raises(BankWriteFailed) as failed:  # retried for write_give_up_s, then given up
                ray.get(actor.update.remote(ValueUpdate(update_id="after", retrieval_id=retrieval.retrieval_id,
                                                        shown_ids=ids[:2], stage="draft", reward=1.0)), timeout=60)
            assert 3.0 <= time.monotonic() - started < 30
            assert str(failed.value.cause if hasattr(failed.value, "cause") else failed.value).startswith(
                full_line(config.uri))
            started = time.monotonic()
            for call in (actor.update.remote(ValueUpdate(update_id="later", shown_ids=ids[:1], stage="draft",
                                                         reward=1.0)),
                         actor.add.remote(items(1, seed=3))):
                with pytest.raises(BankWriteFailed):  # at once: the actor writes no more
                    ray.get(call, timeout=30)
            assert time.monotonic() - started < 5
            with pytest.raises(BankWriteFailed):
                ray.get(actor.close.remote(), timeout=30)
            filler.unlink()
            probe(config.uri)  # the lease went back all the same: a resume can open the bank
            # What was acknowledged before the disk filled is in the bank; nothing after it.
            assert MemoryBank(config, read_only=True).stats().updates == 1
        finally:
            ray.kill(actor, no_restart=True)


def test_closing_while_writes_fail_gives_up_at_once(tmp_path, ray_cluster, memory_config):
    # The campaign's end: nobody waits for the disk, so close() does not retry for write_give_up_s
    # (the driver would otherwise see only "no answer within 30 s").
    with small_disk(tmp_path / "disk", size="8m") as disk:
        config = memory_config(uri=str(disk / "bank"), write_give_up_s=600.0)
        actor = get_or_create_memory_actor(config)
        try:
            ids = ray.get(actor.add.remote(items(3)))
            fill(disk)
            waiting = actor.update.remote(ValueUpdate(update_id="u", shown_ids=ids[:1], stage="draft", reward=1.0))
            time.sleep(2.0)  # a write or two has failed by now
            started = time.monotonic()
            for call in (actor.close.remote(), waiting):
                with pytest.raises(BankWriteFailed, match="no space left on device under"):
                    ray.get(call, timeout=60)
            assert time.monotonic() - started < 10
        finally:
            ray.kill(actor, no_restart=True)
