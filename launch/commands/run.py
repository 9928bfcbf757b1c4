"""`evokernel run`: a campaign of draft-and-refine episodes over a task suite."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from launch.campaign import Campaign, CampaignError, default_suite, new_run_id, select_tasks
from launch.cli import UsageError, add_config_flag
from launch.commands.run_resume import resumed_settings
from launch.config import Settings
from launch.run_summary import RunSummary
from memory_actor.lease import BankUnusable


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run draft-and-refine episodes over a task suite")
    add_config_flag(parser, "--suite", "run.suite", metavar="SUITE_DIR", help="task folder (default: bundled CPU suite)")
    add_config_flag(parser, "--tasks", "run.tasks", metavar="GLOB", help="select task files by name")
    add_config_flag(parser, "--out", "run.out", metavar="RUN_DIR", help="where summary.json and attempts go")
    add_config_flag(parser, "--iterations", "episode.iterations", type=int, metavar="T", help="attempts per operator")
    add_config_flag(parser, "--llm-base-url", "llm.base_url", metavar="URL", help="OpenAI-compatible endpoint")
    add_config_flag(parser, "--llm-model", "llm.model", metavar="M", help="model name")
    add_config_flag(parser, "--memory", "memory.uri", metavar="URI", help="LanceDB memory bank")
    add_config_flag(parser, "--backend", "harness.backend", choices=["auto", "cpu", "cuda", "npu", "npu-twin"])
    add_config_flag(parser, "--retrieval", "memory.retrieval", choices=["value", "similarity", "none"])
    add_config_flag(parser, "--candidate-format", "llm.candidate_format", choices=["auto", "kernel", "modelnew"],
                    help="what the model writes: a C kernel function or a full ModelNew file (default auto: "
                         "kernel for a small model, modelnew for a remote endpoint)")
    add_config_flag(parser, "--ray-address", "ray.address", metavar="auto|local|ADDR",
                    help="local: start Ray here; auto: join the running cluster; or a cluster address")
    add_config_flag(parser, "--max-in-flight", "ray.max_in_flight", type=int, metavar="N",
                    help="operators whose episodes run at once")
    add_config_flag(parser, "--fake-devices", "ray.fake_devices", metavar="KIND:N",
                    help="declare N NPUs (npu:4) or GPUs (cuda:2) to a local Ray instance: the pinning "
                         "runs for real, kernels are evaluated with the cpu backend")
    add_config_flag(parser, "--devices", "ray.devices", type=int, metavar="N", help="use at most N devices (default: all)")
    add_config_flag(parser, "--cpus-per-device", "ray.cpus_per_device", type=float, metavar="C",
                    help="CPU cores per evaluation slot where there is no accelerator (default 1)")
    parser.add_argument("--resume", metavar="RUN_DIR",
                        help="continue a stopped or killed run: its finished operators are kept")
    parser.add_argument("--no-ray", action="store_true",
                        help="single process, no Ray, one operator after another (debugging; the same episode code)")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    _check_sandbox(settings)
    _check_host_memory(args, settings)
    _check_backend(args, settings)
    if not args.no_ray:
        return _run_concurrent(args, settings)
    if settings.ray.fake_devices:
        raise UsageError("fake devices (ray.fake_devices) need Ray (leave out --no-ray)")
    with ExitStack() as stack:
        settings, tasks, run_id, run_dir = _prepare(args, settings, stack, in_ray=False)
        again = f"evokernel run --no-ray --resume {run_dir}"
        _stop_cleanly_on_sigterm(stack)
        if settings.llm.base_url is None:
            settings = _with_local_llm(settings, stack, one_operator_at_a_time=True)
        try:
            if args.resume:
                campaign, tasks = Campaign.resume(settings, run_dir)
            else:
                campaign = Campaign(settings, run_dir, run_id=run_id)
            summary = asyncio.run(campaign.run(tasks))
        except BankUnusable as exc:  # another writer took the bank after the check
            print(f"evokernel run: {exc}", file=sys.stderr)
            return 2
        except CampaignError as exc:
            print(f"evokernel run: stopped: {exc}{_continue_with(run_dir, again)}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the campaign recorded it in summary.json
            print(f"interrupted: continue with  {again}", file=sys.stderr)
            return 130
    summary = RunSummary.model_validate(summary)
    _print_summary(summary, run_dir)
    return _infra_stops(summary, again)


def _check_sandbox(settings: Settings) -> None:
    """Before any model call: refuse at once where candidates could not be confined."""
    from npu_pool.sandbox.runner import SandboxUnavailable, check_confinement

    try:
        check_confinement(settings.harness.confinement)
    except SandboxUnavailable as exc:
        raise UsageError(str(exc)) from None


def _check_host_memory(args: argparse.Namespace, settings: Settings) -> None:
    """Warn when the machine's own memory limit cannot hold the candidates evaluated at once at
    harness.memory_limit_mb each (issue 55): the host would then kill good kernels' compiles
    (reported as infrastructure faults, not judged). At once: one without Ray, else
    --max-in-flight up to the evaluation slots (ray.devices, or a slot per ray.cpus_per_device)."""
    import os

    from npu_pool.sandbox.host_memory import capacity_warning

    slots = settings.ray.devices or max(1, int((os.cpu_count() or 1) // settings.ray.cpus_per_device))
    at_once = 1 if args.no_ray else min(settings.ray.max_in_flight, slots)
    if (line := capacity_warning(settings.harness.memory_limit_mb, at_once)) is not None:
        print(f"evokernel run: warning: {line}", file=sys.stderr)


def _seed_fresh_bank(settings: Settings, run_id: str, in_child: bool) -> None:
    """A first run starts from the backend's bundle, not from an empty bank (nothing to show).
    A Ray run seeds in a child (`_in_child`); a single-process run opens the bank here anyway,
    so it seeds here too and the run reuses the embedding model it loaded (one load, not two:
    5-9 CPU-s)."""
    from memory_actor.lease import BankUnusable
    from memory_actor.seeding import seed_fresh_bank
    from npu_pool.backends import BackendUnavailable, get_backend

    try:
        backend = get_backend(settings.harness.backend).name
    except BackendUnavailable:
        return  # the run itself says what is missing
    try:
        seed_args = (settings.memory, backend, f"evokernel run {run_id}")
        added = _in_child(seed_fresh_bank, *seed_args) if in_child else seed_fresh_bank(*seed_args)
    except BankUnusable as exc:  # another writer took the bank after the check
        raise UsageError(str(exc)) from None
    if added:
        print(f"evokernel run: the memory bank {settings.memory.uri} was empty: seeded {added} {backend} bundle "
              "items (memory.seed_fresh_bank: false starts empty)", file=sys.stderr)


def _take_back_discarded(settings: Settings, run_dir: Path) -> None:
    """A resumed run redoes the operators it did not finish and sets their attempts aside: the
    value updates those attempts made leave the bank too (memory_actor.retraction), so the bank
    learned from exactly the attempts the run folder holds."""
    from launch.campaign import resume_plan
    from memory_actor.lease import BankUnusable
    from memory_actor.retraction import take_back_updates, update_prefix

    try:
        summary, paths, kept = resume_plan(run_dir, settings)
    except CampaignError:
        return  # the campaign's resume says what is wrong with the folder
    finished = {op.task for op in kept}
    prefixes = [update_prefix(summary.run_id, path.stem) for path in paths if path.stem not in finished]
    if not prefixes or not summary.run_id:
        return
    try:
        taken = _in_child(take_back_updates, settings.memory, prefixes, f"evokernel run {summary.run_id} (resume)")
    except BankUnusable as exc:
        raise UsageError(str(exc)) from None
    if taken:
        print(f"evokernel run: took back {taken} value update(s) of the attempts this resume redoes", file=sys.stderr)


def _in_child(function: Any, *args: Any) -> Any:
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


def _check_backend(args: argparse.Namespace, settings: Settings) -> None:
    """Before any model call: refuse at once where the configured backend cannot run here,
    saying what is missing. Not where kernels are evaluated elsewhere (a Ray cluster, whose
    head may have no device) or on fake devices (evaluated with the cpu backend)."""
    from actors.prompting import resolve_candidate_format
    from launch.commands.verify import require_backend

    if settings.ray.fake_devices or (not args.no_ray and settings.ray.address != "local"):
        return
    require_backend(settings.harness.backend, resolve_candidate_format(settings.llm))


def _prepare(args: argparse.Namespace, settings: Settings, stack: ExitStack,
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
    writes it (memory_actor.lease), else one line and exit 2. A resume keeps its run's bank:
    another bank would hold half of what the run learned (and another run's state)."""
    from memory_actor.bank_errors import write_failure
    from memory_actor.lease import BankInUse, BankUnusable, probe

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


def _run_concurrent(args: argparse.Namespace, settings: Settings) -> int:
    """Every operator as a Ray task, over device-pinned pools (launch.concurrent_campaign)."""
    from launch.concurrent_campaign import BankRefused, ConcurrentCampaign
    from npu_pool.devices import FakeDevices

    with ExitStack() as stack:
        settings, tasks, run_id, run_dir = _prepare(args, settings, stack, in_ray=True)
        ray = settings.ray
        fake = FakeDevices.parse(ray.fake_devices) if ray.fake_devices else None  # validated by the settings
        options = dict(fake=fake, cpus_per_slot=ray.cpus_per_device, max_devices=ray.devices)
        _stop_cleanly_on_sigterm(stack)
        if settings.llm.base_url is None:
            settings = _with_local_llm(settings, stack)
        try:
            if args.resume:
                campaign, tasks = ConcurrentCampaign.resume(settings, run_dir, **options)
            else:
                campaign = ConcurrentCampaign(settings, run_dir, run_id=run_id, **options)
            summary = RunSummary.model_validate(campaign.run(tasks))
        except BankRefused as exc:  # another writer took the bank after the check
            print(f"evokernel run: {exc}", file=sys.stderr)
            return 2
        except CampaignError as exc:
            print(f"evokernel run: stopped: {exc}{_continue_with(run_dir, f'evokernel run --resume {run_dir}')}",
                  file=sys.stderr)
            return 1
        except KeyboardInterrupt:  # a stop the campaign could not absorb: the same line as any stop
            print(f"interrupted: continue with  evokernel run --resume {run_dir}", file=sys.stderr)
            return 130
    _print_summary(summary, run_dir)
    if summary.interrupted:
        print(f"interrupted: continue with  evokernel run --resume {run_dir}", file=sys.stderr)
        return 130
    if summary.error:
        print(f"evokernel run: stopped: {summary.error}{_continue_with(run_dir, f'evokernel run --resume {run_dir}')}",
              file=sys.stderr)
        return 1
    return _infra_stops(summary, f"evokernel run --resume {run_dir}")


def _continue_with(run_dir: Path, again: str) -> str:
    """The resume command, where the run folder holds a run to resume (a run stopped before
    its first summary, a full disk say, is started again instead)."""
    from launch.run_summary import SUMMARY_FILE

    return f"\n  continue with  {again}" if (run_dir / SUMMARY_FILE).is_file() else ""


def _infra_stops(summary: RunSummary, again: str) -> int:
    """1 with a resume hint when infrastructure stopped operators (the LLM endpoint's faults, a node
    lost once too often: not the model's verdict, a resumed run redoes them), else 0."""
    from actors.episode_factory import INFRA
    from launch.lost_operators import LostOperators

    stopped = [op for op in summary.operators if op.stopped_by == INFRA]
    if not stopped:
        return 0
    lost = [op.task for op in stopped if LostOperators.is_lost(op.error)]
    endpoint = [op.task for op in stopped if op.task not in lost]
    for tasks, why in ((endpoint, "stopped by the LLM endpoint's faults"), (lost, "lost with their node")):
        if tasks:
            print(f"evokernel run: {len(tasks)} operator(s) {why}, not judged: "
                  f"{', '.join(tasks[:5])}{' ...' if len(tasks) > 5 else ''}", file=sys.stderr)
    print(f"  continue with  {again}", file=sys.stderr)
    return 1


def _stop_cleanly_on_sigterm(stack: ExitStack) -> None:
    """SIGTERM (a scheduler, `timeout`, `kill`, `ray job stop`) unwinds like Ctrl-C, so the local
    model server and Ray are stopped and the run folder is left consistent (summary.json marked
    interrupted, a resume hint), instead of dying on the spot. It is handed to whatever handles
    SIGINT at that moment: asyncio.run's handler cancels the single-process campaign's task, the
    default one raises KeyboardInterrupt. The Ray campaign keeps this handler over ray.init's
    (launch.ray_session.connect_ray)."""

    def interrupt(signum: int, frame: Any) -> None:
        as_ctrl_c = signal.getsignal(signal.SIGINT)
        if callable(as_ctrl_c):
            as_ctrl_c(signal.SIGINT, frame)
        else:  # SIGINT ignored or left to the C default: still stop cleanly
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    stack.callback(signal.signal, signal.SIGTERM, previous)


def _with_local_llm(settings: Settings, stack: ExitStack, one_operator_at_a_time: bool = False) -> Settings:
    """No endpoint configured: serve the offline default model for the duration of the run."""
    from launch.local_llm.process import LocalLLMError
    from launch.local_llm.server import local_llm_server
    from launch.local_llm.settings import local_llm_settings

    try:
        base_url = stack.enter_context(local_llm_server(settings, one_operator_at_a_time))
    except LocalLLMError as exc:
        raise UsageError(f"{exc}\n  or point the run at an OpenAI-compatible endpoint with --llm-base-url URL") from None
    # The model's own agent settings, and no more operators in flight than one server answers.
    return local_llm_settings(settings, base_url)


def _print_summary(summary: RunSummary, run_dir: Path) -> None:
    from actors.episode_factory import INFRA
    from launch.run_summary import INTERRUPTED
    from npu_pool.backends import latency_unit, timing_kind

    unit = latency_unit(timing_kind(summary.settings.get("harness", {}).get("backend")))
    for op in summary.operators:
        if op.feasible:
            outcome = f"{op.best_latency_ms:.4g} {unit}, {op.speedup_vs_eager or 0:.2f}x eager"
            outcome += " (interrupted)" if op.stopped_by == INTERRUPTED else ""
            outcome += f" (not finished: {op.error})" if op.stopped_by == INFRA else ""
        else:
            outcome = "no feasible kernel" + (f" ({op.error})" if op.error else "")
        print(f"{op.task:<32} {outcome:<36} {op.attempts:>3} attempts {op.tokens:>8} tokens")
    t = summary.totals
    # Operators cut short by a stop count as feasible where they had a kernel, but a resume runs
    # them again: said, so "2/2 feasible" after a Ctrl-C is not read as two finished operators.
    # One infrastructure stopped is not counted feasible here: it did not finish (a lost node's
    # operator read "4/4 operators feasible" with all four in error).
    cut = sum(1 for op in summary.operators if op.stopped_by == INTERRUPTED)
    infra = sum(1 for op in summary.operators if op.stopped_by == INFRA)
    notes = [f"{cut} interrupted: --resume runs them again"] if cut else []
    notes += [f"{infra} stopped by infrastructure, not judged"] if infra else []
    feasible = t.feasible - sum(1 for op in summary.operators if op.stopped_by == INFRA and op.feasible)
    note = f" ({'; '.join(notes)})" if notes else ""
    print(f"{feasible}/{t.operators} operators feasible{note}; {t.attempts} attempts, {t.tokens} tokens")
    if summary.lost_tries:  # launch.lost_operators: each is run again once
        lost = ", ".join(f"{task} ({len(tries)}x)" for task, tries in sorted(summary.lost_tries.items()))
        print(f"episodes lost with their node, each run again once: {lost} (summary.json: lost_tries)")
    print(f"run folder: {run_dir}  (summary.json, attempts.jsonl, kernels/; `evokernel report {run_dir}`)")
    _print_same_failure(run_dir)


def _print_same_failure(run_dir: Path) -> None:
    """A run whose every attempt failed alike says so, with the likely fix (launch.same_failure)."""
    from launch.run_records import CorruptRunFolder, read_attempts
    from launch.same_failure import same_failure

    try:
        failure = same_failure(read_attempts(run_dir, []))
    except CorruptRunFolder:
        return
    if failure is not None:
        print(f"evokernel run: {failure.sentence()}", file=sys.stderr)
