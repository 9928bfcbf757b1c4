"""The Ray actor on a real local cluster: named get-or-create, embedding inside the actor,
concurrent writers without lost updates, and SIGKILL mid-stream (batched updates through
update_batch: tests/bench/test_memory.py)."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import ray

from memory_actor.actor_handle import get_or_create_memory_actor
from memory_actor.items import ItemVerdict, MemoryItem
from memory_actor.messages import RetrievalRequest, ValueUpdate
from memory_actor.values import RewardShaper, q_update

from .conftest import unit_vectors


def _synthetic(count, seed=0):
    return [MemoryItem(kind="trace", backend="cpu", content=f"kernel {i}", embedding=v.tolist(),
                       verdict=ItemVerdict(gate="ok"))
            for i, v in enumerate(unit_vectors(count, seed))]


def _serial_replay(config, updates, acks):
    """Final (Q, visits) per (item, stage) when the updates are applied one by one in ack order."""
    values: dict = {}
    shaper = RewardShaper(config)  # the bank's normaliser and baselines, fed the same rewards in the same order
    for update, _ack in sorted(zip(updates, acks, strict=True), key=lambda pair: pair[1].seq):
        _, advantage = shaper.shape(update.stage, update.reward)
        for item_id in update.item_ids:
            # _synthetic makes feasible traces: they start from that prior
            q, visits = values.get((item_id, update.stage), (config.q_init_trace_feasible, 0))
            values[(item_id, update.stage)] = (q_update(q, advantage, config.alpha), visits + 1)
    return values


def _actual(actor, keys):
    out = {}
    for item_id, stage in keys:
        item = ray.get(actor.get.remote(item_id))
        out[(item_id, stage)] = ((item.q_draft, item.visits_draft) if stage == "draft"
                                 else (item.q_refine, item.visits_refine))
    return out


def test_named_actor_is_shared_and_embeds_inside(ray_cluster, memory_config):
    config = memory_config(preload_embedder=True)
    actor = get_or_create_memory_actor(config)
    ids = ray.get(actor.add.remote([
        MemoryItem(kind="practice", backend="cpu", content="Put #pragma omp parallel for on the outer loop.",
                   summary="parallelise the outer loop with OpenMP"),
        MemoryItem(kind="practice", backend="cpu", content="Keep a running max and sum.", summary="online softmax"),
    ]))
    again = get_or_create_memory_actor(config)
    assert ray.get(again.pid.remote()) == ray.get(actor.pid.remote())
    retrieval = ray.get(again.retrieve.remote(RetrievalRequest(
        query="use several threads for the rows", stage="draft", backend="cpu", kinds=["practice"], n=1)))
    assert retrieval.item_ids == [ids[0]]
    stats = ray.get(again.stats.remote())
    assert stats.items == 2 and stats.items_by_kind == {"practice": 2}
    ray.kill(actor)


def test_importing_the_actor_api_loads_no_embedding_model():
    code = ("import sys, memory_actor.actor, memory_actor.messages; "
            "bad = [m for m in ('sentence_transformers', 'torch', 'transformers') if m in sys.modules]; "
            "assert not bad, bad")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_concurrent_writers_lose_no_update(ray_cluster, memory_config):
    config = memory_config()
    actor = get_or_create_memory_actor(config)
    ids = ray.get(actor.add.remote(_synthetic(8)))
    updates = [ValueUpdate(item_ids=[ids[k % 8], ids[(k * 3 + 1) % 8]], stage="refine" if k % 4 == 0 else "draft",
                           reward=((k * 37) % 11) / 5 - 1) for k in range(32 * 12)]
    acks = [None] * len(updates)

    def writer(w):
        for k in range(w, len(updates), 32):
            acks[k] = ray.get(actor.update.remote(updates[k]))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({ack.seq for ack in acks}) == len(updates) and all(ack.durable for ack in acks)
    expected = _serial_replay(config, updates, acks)
    assert _actual(actor, expected) == expected
    ray.kill(actor)


def test_sigkill_mid_stream_keeps_every_acknowledged_update(ray_cluster, memory_config):
    config = memory_config(alpha=0.5, baseline=False, q_init_trace_feasible=0.0)  # so Q = alpha * reward
    actor = get_or_create_memory_actor(config)
    ids = ray.get(actor.add.remote(_synthetic(300)))
    rewards = [((i * 13) % 9) / 4 - 1 for i in range(len(ids))]
    refs: list = []
    acked_before_kill: list = []

    def send():  # a steady stream, one update per item, so the kill lands in the middle of it
        for item_id, reward in zip(ids, rewards, strict=True):
            refs.append(actor.update.remote(ValueUpdate(item_ids=[item_id], stage="draft", reward=reward)))
            time.sleep(0.004)

    sender = threading.Thread(target=send)
    sender.start()
    while len(refs) < 100:
        time.sleep(0.01)
    first_pid = ray.get(actor.pid.remote())
    acked_before_kill = [ray.get(ref) for ref in refs[:60]]
    os.kill(first_pid, signal.SIGKILL)
    sender.join()
    assert len(acked_before_kill) < len(ids)

    acks = ray.get(refs, timeout=120)  # in-flight calls are retried on the restarted actor
    assert ray.get(actor.pid.remote()) != first_pid
    for ack in acked_before_kill:
        assert ack.durable
    for item_id, reward in zip(ids, rewards, strict=True):
        item = ray.get(actor.get.remote(item_id))
        assert item.visits_draft == 1, "every update applied exactly once"
        assert item.q_draft == pytest.approx(0.5 * reward)
    assert {ack.update_id for ack in acks} >= {ack.update_id for ack in acked_before_kill}
    ray.kill(actor)


def test_concurrent_retrievals_are_batched_and_each_gets_its_own_answer(ray_cluster, memory_config):
    actor = get_or_create_memory_actor(memory_config(retrieval="similarity", recall_batch=8))
    items = _synthetic(40, seed=3)
    ids = ray.get(actor.add.remote(items))
    requests = [RetrievalRequest(query="", stage="draft", backend="cpu", kinds=["trace"], n=2, include_api=False,
                                 query_embedding=item.embedding) for item in items[:24]]
    bad = RetrievalRequest(query="", stage="draft", backend="cpu", n=2, query_embedding=[1.0, 0.0])
    refs = [actor.retrieve.remote(r) for r in requests[:12]] + [actor.retrieve.remote(bad)]
    refs += [actor.retrieve.remote(r) for r in requests[12:]]
    replies = ray.get(refs[:12] + refs[13:])
    for item_id, reply in zip(ids, replies, strict=False):
        assert reply.item_ids[0] == item_id and reply.similarities[0] == pytest.approx(1.0, abs=1e-5)
        assert reply.elapsed_ms is not None and reply.elapsed_ms > 0
    with pytest.raises(ray.exceptions.RayTaskError, match="query embedding of 2 floats"):
        ray.get(refs[12])
    ray.kill(actor)
