"""Memory actor benchmark: retrieval latency in the actor under concurrent callers, sustained
update throughput from concurrent writers, lost updates against a serial replay, and two
writers on one bank (two campaigns: the second refused while the first writes, nothing lost).

    python -m bench.memory [--items 100000] [--updates N] [--writers N] [--bank URI]
                           [--embeddings clustered|random] [--index-min-items N]

Progress and a human summary on stderr, one JSON line on stdout.

The bank is built from synthetic items (so a 1,000,000-item bank builds in minutes without
running the embedding model). An exact recall costs the same whatever the vectors mean; an
indexed one (a bank of `memory.recall_index_min_items` or more, memory_actor/recall/) does not,
so the embeddings have the structure of a real bank's (`clustered`, the default): each item is
a shared direction, its operator's direction and its own noise, weighted so that two items of
one operator have cosine 0.92 and two of different operators 0.77, as in the published v3 C
bank (bench/results/2026-11-28-...-v3-cpu, MiniLM over kernels and lessons: 0.923 and 0.766);
queries are an operator's direction with fresh noise. `random`: independent random unit
vectors, no structure at all (an index's worst case).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import ray
from pydantic import BaseModel

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from bench.memory_bank_build import SyntheticEmbeddings, build_synthetic_bank, feasible_or_no_trace  # noqa: E402
from bench.memory_client import MemoryClient  # noqa: E402
from bench.memory_writers import (  # noqa: E402
    TwoWriterResult,
    compare_with_serial_replay,
    reopen,
    run_two_writers,
)
from memory_actor.actor_handle import get_or_create_memory_actor  # noqa: E402
from memory_actor.bank import MemoryBank  # noqa: E402
from memory_actor.config import MemoryConfig  # noqa: E402
from memory_actor.messages import RetrievalRequest, ValueUpdate  # noqa: E402
from memory_actor.ranking import recall_pool_size  # noqa: E402

WINDOW_PER_WRITER = 32  # updates a writer keeps in flight (fire-and-forget with a bounded window)


class MemoryBenchResult(BaseModel):
    items: int
    synthetic_embeddings: bool = True
    build_s: float
    actor_start_s: float
    retrievals: int
    callers: int
    retrieve_p50_ms: float  # the actor's work for one retrieval: its pass over the matrix, ranking, reply
    retrieve_p99_ms: float
    retrieve_queued_p50_ms: float  # arrival at the actor to reply: also the wait behind other callers
    retrieve_queued_p99_ms: float
    roundtrip_p50_ms: float  # the caller's view, Ray transport included
    roundtrip_p99_ms: float
    updates: int
    writers: int
    updates_per_s: float
    updates_per_s_unbatched: float
    ack_p50_ms: float
    ack_p99_ms: float
    lost_updates: int
    value_mismatches: int
    bank_bytes: int
    versions: int
    bank_bytes_compacted: int
    versions_compacted: int
    reopen_s: float
    two_writers: TwoWriterResult
    # issue 68: a bank recalled through LanceDB's vector index (memory_actor/recall/)
    embeddings: str = "random"
    indexed: bool = False  # the actor recalled through the index (items >= recall_index_min_items)
    index_build_s: float | None = None  # the bank's first opening above the threshold: its recall table built
    recall_k: int = 0
    recall_queries: int = 0
    recall_at_k: float | None = None  # the pool's overlap with an exact search's top K, same queries and filter
    recall_at_k_min: float | None = None
    recall_at_k_unseen: float | None = None  # the same for queries of operators the bank has never seen (clustered)
    recall_at_k_unseen_min: float | None = None
    first_retrieve_ms: float | None = None  # the first retrieval after the actor started (index files still cold)
    retrieve_cpu_ms: float | None = None  # the actor's CPU time (all its threads) per retrieval, over the retrieval phase
    actor_rss_mb: float | None = None  # the actor's resident memory after the retrievals and updates
    actor_peak_rss_mb: float | None = None
    load_average: tuple[float, float] | None = None  # the machine's 1-minute load average at the start and end
    settings: dict[str, Any] = {}  # the memory settings this run changed (--set, --index-min-items)



def _ms(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3) if values else 0.0


def _proc_status_mb(pid: int) -> tuple[float | None, float | None]:
    """(VmRSS, VmHWM) of a local process in MB, from /proc (None where there is none)."""
    try:
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
        return tuple(round(int(fields[key].split()[0]) / 1024, 1) for key in ("VmRSS", "VmHWM"))  # type: ignore[return-value]
    except (OSError, KeyError, ValueError):
        return None, None


def _cpu_s(pid: int) -> float:
    """User and system CPU seconds of a local process so far, from /proc (0 where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def measure_recall(bank: MemoryBank, vectors: SyntheticEmbeddings, ids: list[str], queries: int,
                   seed: int, unseen: bool = False) -> tuple[int, float, float]:
    """recall@K of the bank's pool against an exact search of the same vectors with the same
    filter (a drafting recall on backend cpu: lessons, practices and feasible traces): K, the
    mean and the least overlap over `queries` queries. `ids`: the synthetic items' ids in build order."""
    query = vectors.queries(np.random.default_rng([seed, 3]), queries, unseen)
    k = recall_pool_size(bank.config.items_per_prompt, len(bank.index), bank.config)
    best = np.full((queries, 0), -np.inf, dtype=np.float32)
    best_ids = np.zeros((queries, 0), dtype=np.int64)
    for start, batch in vectors.batches(len(ids)):
        sims = query @ batch.T
        sims[:, ~feasible_or_no_trace(np.arange(start, start + len(batch)))] = -np.inf
        merged = np.concatenate([best, sims], axis=1)
        rows = np.concatenate([best_ids, np.broadcast_to(np.arange(start, start + len(batch)), sims.shape)], axis=1)
        top = np.argpartition(-merged, k - 1, axis=1)[:, :k]
        best, best_ids = np.take_along_axis(merged, top, 1), np.take_along_axis(rows, top, 1)
    overlap = []
    for q, truth in zip(query, best_ids, strict=True):
        pool = bank.recall_pool(RetrievalRequest(query="", stage="draft", backend="cpu", query_embedding=q.tolist()))
        overlap.append(len({item_id for item_id, _ in pool} & {ids[row] for row in truth.tolist()}) / k)
    return k, round(float(np.mean(overlap)), 4), round(float(np.min(overlap)), 4)


def run_memory_bench(items: int, uri: str | None = None, writers: int = 32, updates: int = 20_000,
                     retrievals: int = 2_000, callers: int = 8, seed: int = 0, unbatched_updates: int = 3_000,
                     embeddings: str = "clustered", recall_queries: int = 200, index_min_items: int | None = None,
                     settings: dict[str, Any] | None = None, progress: Callable[[str], None] = lambda message: None) -> MemoryBenchResult:
    """Build the bank, start an actor on it, measure; a temporary bank (uri None) is removed after."""
    own_dir = tempfile.mkdtemp(prefix="evokernel-bench-memory-") if uri is None else None
    uri = uri or own_dir
    load_at_start = _load()
    config = MemoryConfig(uri=uri, seed=seed, preload_embedder=False, actor_name=f"evokernel-memory-bench-{time.time_ns()}")
    if index_min_items is not None or settings:
        config = MemoryConfig.model_validate({**config.model_dump(), **(settings or {}),
                                              **({} if index_min_items is None else {"recall_index_min_items": index_min_items})})
    vectors = SyntheticEmbeddings(embeddings, seed)
    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(address="local", include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        progress(f"building {items} synthetic items in {uri}")
        started = time.perf_counter()
        ids = build_synthetic_bank(uri, items, seed, embeddings)
        build_s = time.perf_counter() - started
        index_build_s = None
        if items >= config.recall_index_min_items:  # the one-time build a bank's first indexed opening does
            progress(f"building the recall index ({items} >= recall_index_min_items {config.recall_index_min_items})")
            started = time.perf_counter()
            MemoryBank(config).close()
            index_build_s = round(time.perf_counter() - started, 2)

        started = time.perf_counter()
        actor = get_or_create_memory_actor(config)
        ray.get(actor.pid.remote())
        actor_start_s = time.perf_counter() - started
        progress(f"actor up in {actor_start_s:.1f}s; {retrievals} retrievals from {callers} callers")

        rng = np.random.default_rng(seed + 1)
        queries = vectors.queries(rng, retrievals)

        def retrieve(i: int) -> tuple[float, float]:
            request = RetrievalRequest(query="", stage="draft" if i % 2 else "refine", backend="cpu",
                                       query_embedding=queries[i].tolist(), seed=i)
            sent = time.perf_counter()
            reply = ray.get(actor.retrieve.remote(request))
            return reply.elapsed_ms or 0.0, (time.perf_counter() - sent) * 1000, reply.service_ms or 0.0

        sent = time.perf_counter()
        ray.get(actor.retrieve.remote(RetrievalRequest(query="", stage="draft", backend="cpu",
                                                       query_embedding=queries[0].tolist())))  # warm-up
        first_retrieve_ms = round((time.perf_counter() - sent) * 1000, 1)
        actor_pid = ray.get(actor.pid.remote())
        cpu_before = _cpu_s(actor_pid)
        with ThreadPoolExecutor(callers) as pool:
            timings = list(pool.map(retrieve, range(retrievals)))
        retrieve_cpu_ms = round((_cpu_s(actor_pid) - cpu_before) * 1000 / retrievals, 2)
        in_actor = [t[0] for t in timings]
        roundtrip = [t[1] for t in timings]
        service = [t[2] for t in timings]

        stream = [ValueUpdate(shown_ids=[ids[j] for j in rng.choice(len(ids), size=3, replace=False)],
                              stage="refine" if k % 3 == 0 else "draft", reward=float(rng.uniform(-1, 1)))
                  for k in range(updates + unbatched_updates)]
        acks: list = [None] * len(stream)
        ack_ms: list[float] = [0.0] * len(stream)

        def direct_writer(w: int, first: int, count: int) -> None:
            in_flight: dict = {}
            for k in range(first + w, first + count, writers):
                if len(in_flight) >= WINDOW_PER_WRITER:
                    done, _ = ray.wait(list(in_flight), num_returns=1)
                    index, sent = in_flight.pop(done[0])
                    acks[index], ack_ms[index] = ray.get(done[0]), (time.perf_counter() - sent) * 1000
                in_flight[actor.update.remote(stream[k])] = (k, time.perf_counter())
            for ref, (index, sent) in in_flight.items():
                acks[index], ack_ms[index] = ray.get(ref), (time.perf_counter() - sent) * 1000

        def client_writer(w: int, first: int, count: int) -> None:
            in_flight = []
            for k in range(first + w, first + count, writers):
                if len(in_flight) >= WINDOW_PER_WRITER:
                    index, sent, future = in_flight.pop(0)
                    acks[index], ack_ms[index] = future.result(), (time.perf_counter() - sent) * 1000
                in_flight.append((k, time.perf_counter(), client.update(stream[k])))
            for index, sent, future in in_flight:
                acks[index], ack_ms[index] = future.result(), (time.perf_counter() - sent) * 1000

        def run_writers(target: Callable[[int, int, int], None], first: int, count: int) -> float:
            started = time.perf_counter()
            threads = [threading.Thread(target=target, args=(w, first, count)) for w in range(writers)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            return count / (time.perf_counter() - started)

        progress(f"{unbatched_updates} updates from {writers} writers, one actor call each")
        unbatched_rate = run_writers(direct_writer, updates, unbatched_updates) if unbatched_updates else 0.0
        progress(f"{updates} updates from {writers} writers through a MemoryClient")
        client = MemoryClient(actor)
        rate = run_writers(client_writer, 0, updates)
        client.close()
        ray.get(actor.flush.remote())
        rss_mb, peak_rss_mb = _proc_status_mb(actor_pid)
        ray.kill(actor)

        progress("reopening the bank from disk and replaying the update stream serially")
        started = time.perf_counter()
        reopened = reopen(config)
        reopen_s = time.perf_counter() - started
        lost, mismatches = compare_with_serial_replay(reopened, stream, acks, config)
        indexed = reopened.recall is not None
        progress(f"recall@K of {recall_queries} queries against an exact search")
        recall_k, recall_at_k, recall_min = (measure_recall(reopened, vectors, ids, recall_queries, seed)
                                             if recall_queries else (0, None, None))
        _, recall_unseen, recall_unseen_min = (measure_recall(reopened, vectors, ids, recall_queries, seed, True)
                                               if recall_queries and embeddings == "clustered" else (0, None, None))
        stats = reopened.stats()
        reopened.compact(retention_s=0)  # the benchmark's bank has no other readers
        compacted = reopened.stats()
        reopened.close()
        progress("two writers on one bank: the second refused while the first writes, then after it")
        two = run_two_writers(seed=seed)
        return MemoryBenchResult(
            two_writers=two, items=items, build_s=round(build_s, 2), actor_start_s=round(actor_start_s, 2), retrievals=retrievals,
            callers=callers, retrieve_p50_ms=_ms(service, 50), retrieve_p99_ms=_ms(service, 99),
            retrieve_queued_p50_ms=_ms(in_actor, 50), retrieve_queued_p99_ms=_ms(in_actor, 99),
            roundtrip_p50_ms=_ms(roundtrip, 50), roundtrip_p99_ms=_ms(roundtrip, 99),
            updates=updates, writers=writers, updates_per_s=round(rate, 1),
            updates_per_s_unbatched=round(unbatched_rate, 1), ack_p50_ms=_ms(ack_ms, 50), ack_p99_ms=_ms(ack_ms, 99),
            lost_updates=lost, value_mismatches=mismatches, bank_bytes=stats.bank_bytes or 0,
            versions=sum(stats.versions.values()), bank_bytes_compacted=compacted.bank_bytes or 0,
            versions_compacted=sum(compacted.versions.values()), reopen_s=round(reopen_s, 2),
            embeddings=embeddings, indexed=indexed, index_build_s=index_build_s, recall_k=recall_k,
            recall_queries=recall_queries, recall_at_k=recall_at_k, recall_at_k_min=recall_min,
            recall_at_k_unseen=recall_unseen, recall_at_k_unseen_min=recall_unseen_min,
            first_retrieve_ms=first_retrieve_ms, retrieve_cpu_ms=retrieve_cpu_ms, actor_rss_mb=rss_mb, actor_peak_rss_mb=peak_rss_mb,
            load_average=(load_at_start, _load()),
            settings={**(settings or {}), **({} if index_min_items is None else {"recall_index_min_items": index_min_items})},
        )
    finally:
        if started_ray:
            ray.shutdown()
        if own_dir is not None:
            shutil.rmtree(own_dir, ignore_errors=True)



def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=100_000, help="synthetic items in the bank (default 100000)")
    p.add_argument("--updates", type=int, default=20_000, help="updates sent through a MemoryClient")
    p.add_argument("--unbatched-updates", type=int, default=3_000, help="updates sent one actor call each")
    p.add_argument("--writers", type=int, default=32, help="concurrent update writers")
    p.add_argument("--retrievals", type=int, default=2_000)
    p.add_argument("--callers", type=int, default=8, help="concurrent retrieval callers")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic bank, queries and updates")
    p.add_argument("--embeddings", choices=["clustered", "random"], default="clustered",
                   help="synthetic embeddings: a real bank's structure (default) or independent random vectors")
    p.add_argument("--recall-queries", type=int, default=200, help="queries for recall@K against exact search (0: none)")
    p.add_argument("--index-min-items", type=int, default=None, metavar="N",
                   help="memory.recall_index_min_items for this run (default: the config's)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="settings",
                   help="a memory setting for this run (memory_actor/config.py), e.g. recall_index_batch=1")
    p.add_argument("--bank", metavar="URI", default=None,
                   help="build the bank here and keep it (default: a temporary directory, removed after)")
    args = p.parse_args(argv)
    for name in ("items", "updates", "writers", "retrievals", "callers"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    if any("=" not in setting for setting in args.settings):
        p.error("--set takes KEY=VALUE")
    if args.unbatched_updates < 0 or args.recall_queries < 0:
        p.error("--unbatched-updates and --recall-queries must be at least 0")
    return args


def summary(result: MemoryBenchResult) -> str:
    return "\n".join([
        f"items                {result.items:,} (synthetic {result.embeddings} embeddings)",
        f"retrieve in actor    p50 {result.retrieve_p50_ms:.2f} ms   p99 {result.retrieve_p99_ms:.2f} ms "
        "(serving one retrieval)",
        f"  with queueing      p50 {result.retrieve_queued_p50_ms:.2f} ms   p99 {result.retrieve_queued_p99_ms:.2f} ms "
        f"(behind the other {result.callers - 1} callers)",
        f"retrieve round trip  p50 {result.roundtrip_p50_ms:.2f} ms   p99 {result.roundtrip_p99_ms:.2f} ms",
        f"  the actor's CPU    {result.retrieve_cpu_ms} ms per retrieval (all its threads)",
        f"updates              {result.updates_per_s:,.0f}/s through MemoryClient, "
        f"{result.updates_per_s_unbatched:,.0f}/s one call each ({result.writers} writers)",
        f"lost updates         {result.lost_updates}   value mismatches {result.value_mismatches}",
        f"recall               {'LanceDB index' if result.indexed else 'exact'}; recall@{result.recall_k} "
        f"{result.recall_at_k} (least {result.recall_at_k_min}) over {result.recall_queries} queries, "
        f"{result.embeddings} embeddings; of unseen operators {result.recall_at_k_unseen} "
        f"(least {result.recall_at_k_unseen_min})",
        f"actor                start {result.actor_start_s:.1f} s, first retrieval {result.first_retrieve_ms} ms, "
        f"resident {result.actor_rss_mb} MB (peak {result.actor_peak_rss_mb}); reopen {result.reopen_s:.1f} s",
        f"bank on disk         {result.bank_bytes:,} bytes in {result.versions} versions; "
        f"{result.bank_bytes_compacted:,} bytes after compaction",
        f"two writers          second refused while the first wrote: {result.two_writers.second_writer_refused}; "
        f"lost {result.two_writers.lost_updates} of {result.two_writers.updates}, "
        f"duplicate items {result.two_writers.duplicate_items}",
    ])


def main(argv: Sequence[str] | None = None) -> int:
    from launch.logging import configure_logging

    args = parse_args(argv)
    configure_logging(level="warning")  # to stderr: stdout carries the JSON line alone
    result = run_memory_bench(
        args.items, uri=args.bank, writers=args.writers, updates=args.updates, retrievals=args.retrievals,
        callers=args.callers, unbatched_updates=args.unbatched_updates, seed=args.seed, embeddings=args.embeddings,
        recall_queries=args.recall_queries, index_min_items=args.index_min_items,
        settings=dict(setting.split("=", 1) for setting in args.settings),
        progress=lambda message: print(f"bench.memory: {message}", file=sys.stderr, flush=True),
    )
    print(summary(result), file=sys.stderr, flush=True)
    print(json.dumps({"bench": "memory", **result.model_dump()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
