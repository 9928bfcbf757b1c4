"""`evokernel tasks`: load, fit and run every task of a suite."""

from __future__ import annotations

import argparse
import json
import time

from launch.cli import UsageError, add_config_flag
from launch.config import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("tasks", help="load, fit and run every task of a suite")

    sub = parser.add_subparsers(dest="tasks_command", metavar="ACTION")
    sub.required = True
    check = sub.add_parser("check", help="load every task, fit its sizes, run its reference")
    check.add_argument("suite_dirs", nargs="+", metavar="SUITE_DIR")
    add_config_flag(check, "--sizes", "harness.sizes", choices=["fit", "original"])
    check.add_argument("--json", action="store_true")
    check.set_defaults(handler=handle_check)
    rungs = sub.add_parser("rungs", help="which first rung of the ladder each task's draft may be shown, and why not")
    rungs.add_argument("suite_dirs", nargs="*", metavar="SUITE_DIR", help="default: the bundled suite's level1")
    add_config_flag(rungs, "--backend", "harness.backend")
    rungs.add_argument("--json", action="store_true")
    rungs.set_defaults(handler=handle_rungs)


def _sizes_text(spec) -> str:
    parts = []
    for name, value in spec.sizes.items():
        original = spec.original_sizes.get(name, value)
        parts.append(f"{name}={value}" + (f"(<-{original})" if original != value else ""))
    return " ".join(parts)


def handle_check(args: argparse.Namespace, settings: Settings) -> int:
    from npu_pool.sandbox.task_loader import load_and_time_reference
    from npu_pool.tasks.spec import TaskLoadError, discover_tasks

    files = discover_tasks(args.suite_dirs)
    if not files:
        raise UsageError(f"no task files under {' '.join(args.suite_dirs)}")
    rows = []
    for path in files:
        started = time.perf_counter()
        row = {"task": path.stem, "path": str(path), "ok": False}
        try:
            # the task file's code (its loading and its reference) runs only in the bounded, confined child
            spec, reference_s = load_and_time_reference(path, settings.harness)
            row.update(sizes=spec.sizes, original_sizes=spec.original_sizes, tensor_mib=spec.tensor_bytes / 2**20,
                       gflop=spec.flops / 1e9, kernel_signature=spec.kernel_signature is not None)
            row["reference_ms"] = 1e3 * reference_s
            row["ok"] = True
        except TaskLoadError as exc:
            row["error"] = str(exc)
        except Exception as exc:  # the reference itself failed
            row["error"] = f"{type(exc).__name__}: {exc}"[:300]
        row["seconds"] = time.perf_counter() - started
        rows.append(row)
        if row["ok"]:
            print(f"ok    {path.stem:<32} {row['reference_ms']:9.2f} ms  {row['tensor_mib']:7.1f} MiB  "
                  f"{row['gflop']:7.3f} GFLOP  {_sizes_text(spec)}", flush=True)
        else:
            print(f"FAIL  {path.stem:<32} {row['error']}", flush=True)
    ok = sum(r["ok"] for r in rows)
    print(f"{ok} of {len(rows)} tasks loaded, fitted and ran")
    if args.json:
        print(json.dumps({"ok": ok, "total": len(rows), "failed": [r["task"] for r in rows if not r["ok"]],
                          "tasks": rows}))
    return 0 if ok == len(rows) else 1


def handle_rungs(args: argparse.Namespace, settings: Settings) -> int:
    """Per task: its family, its signature's shape and the rung whose signature maps onto it (the
    one its drafts may be shown, docs/memory.md "The ladder"), or why there is none; ends with
    `rungs: N of M operators`. Task files are loaded in the bounded child, as `tasks check` does."""
    from actors.briefing import family_rung
    from actors.families import dominant_family
    from actors.signature_shape import signature_shape
    from launch.campaign import default_suite
    from memory_actor.seeding import family_rungs
    from npu_pool.backends import get_backend
    from npu_pool.sandbox.task_loader import load_task_for
    from npu_pool.tasks.spec import TaskLoadError, discover_tasks

    backend = get_backend(settings.harness.backend)
    files = discover_tasks(args.suite_dirs or [default_suite() / "level1"])
    if not files:
        raise UsageError(f"no task files under {' '.join(args.suite_dirs)}")
    ladder = family_rungs(backend.name) if backend.name in ("cpu", "npu", "npu-twin") else {}
    rows = []
    for path in files:
        row: dict = {"task": path.stem, "rung": None}
        try:
            task = load_task_for(path, settings.harness)
        except TaskLoadError as exc:
            row["why_none"] = f"the task does not load: {str(exc).splitlines()[0][:200]}"
            rows.append(row)
            continue
        family = dominant_family(task.source)
        signature = backend.render_kernel_signature(task.kernel_signature) if task.kernel_signature else None
        row.update(family=family, shape=signature_shape(signature))
        if signature is None:
            row["why_none"] = f"no kernel signature: {task.signature_error or 'the task has none'}"
        elif not ladder:
            row["why_none"] = f"no ladder for the {backend.name} backend (cpu, npu, npu-twin have one)"
        else:
            row["rung"] = family_rung(backend.name, family, signature, "kernel")
            if row["rung"] is None:
                row["why_none"] = (f"none of the {family} family's {len(ladder.get(family, []))} rungs has this "
                                   "signature's shape")
        rows.append(row)
        print(f"{path.stem:<32} {row.get('family', '-'):<14} {row['rung'] or 'none: ' + row['why_none']}", flush=True)
    reached = sum(1 for r in rows if r["rung"])
    print(f"rungs: {reached} of {len(rows)} operators")
    if args.json:
        print(json.dumps({"backend": backend.name, "reached": reached, "total": len(rows), "tasks": rows}))
    return 0
