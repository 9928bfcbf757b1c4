"""`evokernel bench`: benchmarks of EvoKernel's own components."""

from __future__ import annotations

import argparse
import sys

from launch.cli import UsageError
from launch.config import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="benchmarks of EvoKernel's own components")
    sub = parser.add_subparsers(dest="bench_command", metavar="WHAT")
    sub.required = True

    memory = sub.add_parser("memory", help="memory actor retrieval latency, update throughput and lost updates")
    memory.add_argument("--items", type=int, default=100_000, help="synthetic items in the bank (default 100000)")
    memory.add_argument("--updates", type=int, default=20_000, help="updates sent through a MemoryClient")
    memory.add_argument("--unbatched-updates", type=int, default=3_000, help="updates sent one actor call each")
    memory.add_argument("--writers", type=int, default=32, help="concurrent update writers")
    memory.add_argument("--retrievals", type=int, default=2_000)
    memory.add_argument("--callers", type=int, default=8, help="concurrent retrieval callers")
    memory.add_argument("--bank", metavar="URI", default=None,
                        help="build the bank here and keep it (default: a temporary directory, removed after)")
    memory.add_argument("--json", action="store_true", help="end with one JSON line of the results")
    memory.set_defaults(handler=bench_memory)


def bench_memory(args: argparse.Namespace, settings: Settings) -> int:
    from memory_actor.benchmark import run_memory_bench

    for name in ("items", "updates", "writers", "retrievals", "callers"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name} must be at least 1")
    result = run_memory_bench(
        args.items, uri=args.bank, writers=args.writers, updates=args.updates, retrievals=args.retrievals,
        callers=args.callers, unbatched_updates=max(0, args.unbatched_updates), seed=settings.memory.seed,
        progress=lambda message: print(f"bench memory: {message}", file=sys.stderr),
    )
    if args.json:
        print(result.model_dump_json())
        return 0
    print(f"items                {result.items:,} (synthetic random unit-vector embeddings)")
    print(f"retrieve in actor    p50 {result.retrieve_p50_ms:.2f} ms   p99 {result.retrieve_p99_ms:.2f} ms "
          "(serving one retrieval)")
    print(f"  with queueing      p50 {result.retrieve_queued_p50_ms:.2f} ms   p99 {result.retrieve_queued_p99_ms:.2f} ms "
          f"(behind the other {result.callers - 1} callers)")
    print(f"retrieve round trip  p50 {result.roundtrip_p50_ms:.2f} ms   p99 {result.roundtrip_p99_ms:.2f} ms")
    print(f"updates              {result.updates_per_s:,.0f}/s through MemoryClient, "
          f"{result.updates_per_s_unbatched:,.0f}/s one call each ({result.writers} writers)")
    print(f"lost updates         {result.lost_updates}   value mismatches {result.value_mismatches}")
    print(f"bank on disk         {result.bank_bytes:,} bytes in {result.versions} versions; "
          f"{result.bank_bytes_compacted:,} bytes after compaction")
    return 0
