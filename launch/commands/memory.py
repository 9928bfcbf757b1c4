"""`evokernel memory`: inspect, seed, export and import the memory bank."""

from __future__ import annotations

import argparse
import json
import os

from launch.cli import UsageError, add_config_flag
from launch.config import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("memory", help="inspect, seed, export and import the memory bank")
    add_config_flag(parser, "--memory", "memory.uri", metavar="URI", help="LanceDB memory bank")
    sub = parser.add_subparsers(dest="memory_command", metavar="ACTION")
    sub.required = True

    stats = sub.add_parser("stats", help="items by kind and backend, updates, versions and size on disk")
    stats.add_argument("--json", action="store_true", help="one JSON object")
    stats.set_defaults(handler=memory_stats)

    search = sub.add_parser("search", help="what a retrieval for TEXT would return (nothing is recorded)")
    search.add_argument("text", metavar="TEXT")
    search.add_argument("--backend", default="cpu")
    search.add_argument("--stage", choices=["draft", "refine"], default="draft")
    search.add_argument("--kinds", default="experience,trace,practice,api", help="comma-separated item kinds")
    search.add_argument("-n", type=int, default=None, help="items wanted (default: memory.items_per_prompt)")
    search.add_argument("--exclude-task", default=None, metavar="TASK_ID")
    search.add_argument("--failed-traces", action="store_true",
                        help="recall failed traces too (a prompt never shows them: only feasible ones by default)")
    search.add_argument("--json", action="store_true")
    search.set_defaults(handler=memory_search)

    show = sub.add_parser("show", help="one item with its values, verdict and children")
    show.add_argument("item_id", metavar="ID")
    show.add_argument("--json", action="store_true")
    show.set_defaults(handler=memory_show)

    export = sub.add_parser("export", help="write every item (values and embeddings) to a JSON-lines file")
    export.add_argument("file", metavar="FILE")
    export.set_defaults(handler=memory_export)

    imported = sub.add_parser("import", help="add the items of an export file (same ids are overwritten)")
    imported.add_argument("file", metavar="FILE")
    imported.set_defaults(handler=memory_import)

    seed = sub.add_parser("seed", help="load a backend's API knowledge and best-practice bundle")
    seed.add_argument("backend", metavar="BACKEND", choices=["cpu", "cuda", "npu", "npu-twin", "all"])
    seed.add_argument("--refresh", action="store_true", help="rewrite bundle items, resetting their values")
    seed.set_defaults(handler=memory_seed)

    for action in (stats, search, show, export, imported, seed):  # `memory ACTION --memory URI` works too
        add_config_flag(action, "--memory", "memory.uri", metavar="URI", help="LanceDB memory bank")


def _open_bank(settings: Settings, create: bool = False):
    """Inspection (create False) opens the bank read-only: nothing is written, no lease is taken,
    so it works on a read-only file system and beside a running campaign. `import` and `seed`
    (create True) become the bank's one writer, or say who is."""
    from memory_actor.bank import MemoryBank
    from memory_actor.disk.lease import BankUnusable, check_writable
    from memory_actor.disk.store import BankStore

    config = settings.memory
    if create:
        try:
            check_writable(config.uri)
            return MemoryBank(config, owner="evokernel memory")
        except BankUnusable as exc:
            raise UsageError(str(exc)) from None
    if not _is_bank(config.uri) or not BankStore(config.uri, config.storage_options, read_only=True).exists():
        raise UsageError(f"no memory bank at {config.uri} (create one with `evokernel memory seed BACKEND` "
                         "or pick it with --memory URI)")
    try:
        return MemoryBank(config, read_only=True)
    except BankUnusable as exc:  # damaged (memory_actor.disk.bank_checksums): which file, and what to do
        raise UsageError(str(exc)) from None


def _is_bank(uri: str) -> bool:
    """False for a local path that is not a folder (lancedb would fail on it with a traceback)."""
    from memory_actor.disk.lease import is_local, local_path

    return not is_local(uri) or os.path.isdir(local_path(uri))


def memory_stats(args: argparse.Namespace, settings: Settings) -> int:
    bank = _open_bank(settings)
    stats, index = bank.stats(), bank.recall_state()
    if args.json:
        print(json.dumps({**stats.model_dump(mode="json"), "recall_index": index}))
        return 0
    print(f"bank       {stats.uri}  ({stats.embedder}, {stats.embedding_dim} dims)")
    print(f"items      {stats.items}  by kind {stats.items_by_kind or '{}'}  by backend {stats.items_by_backend or '{}'}")
    print(f"updates    {stats.updates}  (log rows {stats.log_rows}, last seq {stats.last_seq})")
    print(f"refine     reward mean {stats.refine_reward_mean:.3f} std {stats.refine_reward_std:.3f} "
          f"over {stats.refine_rewards_seen}")
    print(f"disk       {stats.bank_bytes or 0:,} bytes  versions {stats.versions}")
    print(f"recall     {_index_line(index)}")
    return 0


def _index_line(index: dict) -> str:
    """Whether the bank recalls through LanceDB's vector index, and how it stands (memory_actor/recall/)."""
    if not index["indexed"]:
        return f"exact (in memory): an index from {index['threshold']:,} items (memory.recall_index_min_items)"
    return (f"LanceDB {index.get('index', 'index (not built yet)')} over {index.get('indexed_rows', 0):,} items, "
            f"{index['fresh_items']:,} added since searched exactly; last refreshed {index.get('refreshed_at', 'never')}")


def memory_search(args: argparse.Namespace, settings: Settings) -> int:
    from memory_actor.items import ITEM_KINDS
    from memory_actor.messages import RetrievalRequest

    kinds = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
    unknown = [kind for kind in kinds if kind not in ITEM_KINDS]
    if unknown:
        raise UsageError(f"unknown item kinds {unknown}; kinds are {', '.join(ITEM_KINDS)}")
    if args.n is not None and args.n < 0:
        raise UsageError("-n must be at least 0")
    request = RetrievalRequest(query=args.text, stage=args.stage, backend=args.backend, kinds=kinds, n=args.n,
                               exclude_task_id=args.exclude_task, include_api=False,
                               trace_verdicts="any" if args.failed_traces else "feasible")
    retrieval = _open_bank(settings).retrieve(request, record=False)
    if args.json:
        print(retrieval.model_dump_json())
        return 0
    if not retrieval.items:
        print(f"no items (mode {retrieval.mode}, backend {args.backend}, kinds {','.join(kinds)})")
    for item, score, sim in zip(retrieval.items, retrieval.scores, retrieval.similarities, strict=True):
        q = item.q_draft if args.stage == "draft" else item.q_refine
        gate = f" [{item.verdict.gate}]" if item.kind == "trace" and item.verdict is not None else ""
        print(f"{item.id}  {item.kind + gate:<18} score {score:+.3f}  sim {sim:.3f}  Q {q:+.3f}  {item.name or item.summary[:70]}")
    return 0


def memory_show(args: argparse.Namespace, settings: Settings) -> int:
    bank = _open_bank(settings)
    item = bank.get(args.item_id)
    if item is None:
        raise UsageError(f"no item {args.item_id!r} in {settings.memory.uri}")
    children = [child.id for child in bank.children(args.item_id)]
    if args.json:
        print(json.dumps({"item": item.model_dump(mode="json"), "children": children}))
        return 0
    for name in ("id", "kind", "backend", "task_id", "stage", "name", "summary", "parent_id", "run_id"):
        value = getattr(item, name)
        if value:
            print(f"{name:<14} {value}")
    print(f"{'values':<14} draft Q {item.q_draft:+.3f} ({item.visits_draft} visits), "
          f"refine Q {item.q_refine:+.3f} ({item.visits_refine} visits)")
    if item.verdict:
        print(f"{'verdict':<14} {item.verdict.model_dump_json()}")
    if children:
        print(f"{'children':<14} {', '.join(children)}")
    print("content:")
    print(item.content)
    return 0


def memory_export(args: argparse.Namespace, settings: Settings) -> int:
    from memory_actor.transfer import export_bank

    count = export_bank(_open_bank(settings), args.file)
    print(f"exported {count} items to {args.file}")
    return 0


def memory_import(args: argparse.Namespace, settings: Settings) -> int:
    from memory_actor.transfer import import_bank

    try:
        bank = _open_bank(settings, create=True)
        count = import_bank(bank, args.file)
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from exc
    bank.close()
    print(f"imported {count} items into {settings.memory.uri}")
    return 0


def memory_seed(args: argparse.Namespace, settings: Settings) -> int:
    from memory_actor.seeding import BUNDLE_BACKENDS, seed_items

    bank = _open_bank(settings, create=True)
    for backend in BUNDLE_BACKENDS if args.backend == "all" else (args.backend,):
        items = seed_items(backend, set(bank.items), refresh=args.refresh)
        bank.add(items)
        print(f"seeded {len(items)} {backend} bundle items into {settings.memory.uri}")
    bank.close()
    return 0
