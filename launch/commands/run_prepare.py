"""What `evokernel run` checks and prepares before any model call.

The checks: candidates can be confined here, the host's memory can hold them (a warning), the
backend can run here, the run folder is not another run's, and nobody else writes the memory bank. The plan: the run's settings, task files,
run id and folder, the folder locked for this process; a new run's empty bank seeded with the
backend's bundle; a resume's settings from its run folder (launch.commands.run_resume) and the
bank's value updates of the operators it redoes taken back.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from launch.campaign import CampaignError, default_suite, new_run_id, select_tasks
from launch.cli import UsageError
from launch.commands.run_resume import resumed_settings
from launch.config import Settings


def check_sandbox(settings: Settings) -> None:
    """Before any model call: refuse at once where candidates could not be confined."""
    from npu_pool.sandbox.confinement import SandboxUnavailable, check_confinement

    try:
        check_confinement(settings.harness.confinement)
    except SandboxUnavailable as exc:
        raise UsageError(str(exc)) from None


def check_host_memory(args: argparse.Namespace, settings: Settings) -> None:
    """Warn when the machine's own memory limit cannot hold the run (Ray, its actors and workers,
    the task loaders, the local model) and its candidates evaluated at once at
    harness.memory_limit_mb each, with a setting that fits (launch.host_capacity): the host would
    otherwise kill good kernels (infrastructure faults, not judged)."""
    from launch.host_capacity import capacity_warning, shape_of

    if (line := capacity_warning(shape_of(settings, no_ray=args.no_ray))) is not None:
        print(f"evokernel run: warning: {line}", file=sys.stderr)


def _seed_fresh_bank(settings: Settings, run_id: str, in_child: bool) -> None:
    """A first run starts from the backend's bundle, not from an empty bank (nothing to show).
    A Ray run seeds in a child (`run_in_child`); a single-process run opens the bank here anyway,
    so it seeds here too and the run reuses the embedding model it loaded (one load, not two:
    5-9 CPU-s)."""
    from memory_actor.disk.lease import BankUnusable
    from memory_actor.seeding import seed_fresh_bank
    from npu_pool.backends import BackendUnavailable, get_backend

    try:
        backend = get_backend(settings.harness.backend).name
    except BackendUnavailable:
        return  # the run itself says what is missing
    try:
        seed_args = (settings.memory, backend, f"evokernel run {run_id}")
        added = run_in_child(seed_fresh_bank, *seed_args) if in_child else seed_fresh_bank(*seed_args)
    except BankUnusable as exc:  # another writer took the bank after the check
        raise UsageError(str(exc)) from None
    if added:
        print(f"evokernel run: the memory bank {settings.memory.uri} was empty: seeded {added} {backend} bundle "
              "items (memory.seed_fresh_bank: false starts empty)", file=sys.stderr)


def _take_back_discarded(settings: Settings, run_dir: Path) -> None:
    """A resumed run redoes the operators it did not finish and sets their attempts aside: the
    value updates those attempts made and the traces and lessons they added leave the bank too
    (memory_actor.retraction), so the bank learned from, and shows, exactly the attempts the run
    folder holds."""
    from launch.campaign import resume_plan
    from memory_actor.disk.lease import BankUnusable
    from memory_actor.retraction import take_back_attempts

    try:
        summary, paths, kept = resume_plan(run_dir, settings)
    except CampaignError:
        return  # the campaign's resume says what is wrong with the folder
    finished = {op.task for op in kept}
    redone = [path.stem for path in paths if path.stem not in finished]
    if not redone or not summary.run_id:
        return
    try:
        updates, items = run_in_child(take_back_attempts, settings.memory, summary.run_id, redone,
                                      f"evokernel run {summary.run_id} (resume)")
    except BankUnusable as exc:
        raise UsageError(str(exc)) from None
    if updates or items:
        print(f"evokernel run: took back {updates} value update(s) and {items} item(s) (traces and lessons) of the "
              "attempts this resume redoes", file=sys.stderr)


def run_in_child(function: Any, *args: Any) -> Any:
    """FUNCTION(*ARGS) in a spawned child: a Ray run's driver does not open the bank itself (the
    memory actor does), so LanceDB's runtime stays out of the process that starts Ray (LanceDB
    warns that a fork can deadlock it). A single-process run opens the bank in-process anyway.
    The child logs as this process does (else its lines alone would be console text in a JSON log)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from launch.logging import child_logging_args, configure_logging

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=configure_logging,
                             initargs=child_logging_args()) as child:
        return child.submit(function, *args).result()


def check_backend(args: argparse.Namespace, settings: Settings) -> None:
    """Before any model call: refuse at once where the configured backend cannot run here,
    saying what is missing. Not where kernels are evaluated elsewhere (a Ray cluster, whose
    head may have no device) or on fake devices (evaluated with the cpu backend)."""
    from actors.prompt_templates import resolve_candidate_format
    from launch.commands.verify import require_backend

    if settings.ray.fake_devices or (not args.no_ray and settings.ray.address != "local"):
        return
    require_backend(settings.harness.backend, resolve_candidate_format(settings.llm))


def prepare(args: argparse.Namespace, settings: Settings, stack: ExitStack,
             in_ray: bool) -> tuple[Settings, list[Path], str, Path]:
    """The run's settings, task files, run id and folder, the folder locked for this process
    (launch.run_lock) before anything is written there or in the bank: a resume takes the
    lock before it takes back the bank's updates of the operators it redoes."""
    if not args.resume:
        return (settings, *_plan(settings, in_ray, stack))
    run_dir = Path(args.resume).expanduser()
    if run_dir.is_dir():  # else the resume below says what is wrong with it
        _lock_run_folder(stack, run_dir, "evokernel run --resume")
    settings = resumed_settings(args, settings, run_dir)
    _check_memory(settings, resuming=run_dir)
    _take_back_discarded(settings, run_dir)
    return settings, [], "", run_dir


def _lock_run_folder(stack: ExitStack, run_dir: Path, owner: str) -> None:
    from launch.run_lock import RunFolderInUse, RunFolderLock

    try:
        stack.enter_context(RunFolderLock(run_dir, owner))
    except RunFolderInUse as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:  # a read-only file system, no inode left: one line
        from launch.campaign import folder_failure

        raise UsageError(str(folder_failure(exc, run_dir))) from None


def _plan(settings: Settings, in_ray: bool, stack: ExitStack) -> tuple[list[Path], str, Path]:
    """The selected task files, a new run id and the run folder, locked (its bank seeded when new)."""
    suite = Path(settings.run.suite).expanduser() if settings.run.suite else default_suite()
    try:
        tasks = select_tasks(suite, settings.run.tasks)
    except CampaignError as exc:
        raise UsageError(str(exc)) from None
    run_id = new_run_id()
    run_dir = Path(settings.run.out).expanduser() if settings.run.out else Path("runs") / run_id
    _check_run_folder(run_dir)
    _check_memory(settings)
    _lock_run_folder(stack, run_dir, f"evokernel run {run_id}")
    _check_run_folder(run_dir)  # again, locked: a run that started meanwhile into the same --out
    _seed_fresh_bank(settings, run_id, in_child=in_ray)  # a new run, once what the user asked for is valid
    return tasks, run_id, run_dir


def _check_run_folder(run_dir: Path) -> None:
    """A run folder belongs to one run: a new run never writes into another's (`--resume` adds to one)."""
    from launch.run_summary import SUMMARY_FILE

    if run_dir.exists() and not run_dir.is_dir():
        raise UsageError(f"--out {run_dir} is a file, not a folder")
    if (run_dir / SUMMARY_FILE).exists() or (run_dir / "attempts.jsonl").exists():
        raise UsageError(f"{run_dir} holds another run: continue it with `evokernel run --resume {run_dir}`, "
                         "or pick another --out folder")


def _check_memory(settings: Settings, resuming: Path | None = None) -> None:
    """Before Ray starts and before any model call: the bank can be written here and nobody else
    writes it (memory_actor.disk.lease), else one line and exit 2. A resume keeps its run's bank:
    another bank would hold half of what the run learned (and another run's state)."""
    from memory_actor.disk.bank_errors import write_failure
    from memory_actor.disk.lease import BankInUse, BankUnusable, probe

    try:
        probe(settings.memory.uri)
    except BankInUse as exc:
        if resuming is None:
            raise UsageError(str(exc)) from None
        # Not "pick another --memory": a resume must continue with the bank its run learned into.
        advice = f"wait for it to finish, then `evokernel run --resume {resuming}` again"
        raise UsageError(str(exc).rsplit(": ", 1)[0] + f": {advice}") from None
    except BankUnusable as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:  # writing the lease record: a bank on a full disk, say
        raise UsageError(str(write_failure(exc, settings.memory.uri))) from None
