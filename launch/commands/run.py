"""`evokernel run`: a campaign of draft-and-refine episodes over a task suite.

The command itself: its flags, the campaign it runs (over Ray, or in one process with
`--no-ray`), with SIGTERM stopping it as Ctrl-C does and the local model served where no
endpoint is given. What it checks and prepares before any model call is
launch.commands.run_prepare's; what it says at its end, launch.commands.run_outcome's."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from contextlib import ExitStack
from typing import Any

from launch.campaign import Campaign, CampaignError
from launch.cli import UsageError, add_config_flag
from launch.commands.run_outcome import finish
from launch.commands.run_prepare import check_backend, check_host_memory, check_sandbox, prepare
from launch.config import Settings
from launch.stop_shield import LateStops
from memory_actor.disk.lease import BankUnusable


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run draft-and-refine episodes over a task suite")
    add_config_flag(parser, "--suite", "run.suite", metavar="SUITE_DIR", help="task folder (default: bundled CPU suite)")
    add_config_flag(parser, "--tasks", "run.tasks", metavar="GLOB", help="select task files by name")
    add_config_flag(parser, "--out", "run.out", metavar="RUN_DIR", help="where summary.json and attempts go")
    add_config_flag(parser, "--iterations", "episode.iterations", type=int, metavar="T", help="attempts per operator")
    add_config_flag(parser, "--hours", "run.hours", type=float, metavar="H",
                    help="a wall-time budget for the whole run: attempts go where they are expected to gain most, "
                         "and the run ends at the budget, resumable (run.hours)")
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
    check_sandbox(settings)
    check_host_memory(args, settings)
    check_backend(args, settings)
    if settings.ray.fake_devices and args.no_ray:
        raise UsageError("fake devices (ray.fake_devices) need Ray (leave out --no-ray)")
    late = LateStops()
    try:
        return _run_concurrent(args, settings, late) if not args.no_ray else _run_one_process(args, settings, late)
    finally:
        _remove_orphaned_groups()
        late.restore()


def _remove_orphaned_groups() -> None:
    """Control groups whose owner died without removing them: a task loader's, when Ray SIGKILLed
    the episode worker that started it (one was left after every normal Ray run, for good: issue
    63). Removed at the run's end, with anything still in them (npu_pool.sandbox.tree_limits)."""
    import structlog

    from npu_pool.sandbox.tree_limits import sweep_dead_owners

    if removed := sweep_dead_owners():
        structlog.get_logger("evokernel.run").info("orphaned_groups_removed", groups=removed)


def _run_one_process(args: argparse.Namespace, settings: Settings, late: LateStops) -> int:
    """Every operator in this process, one after another (launch.campaign)."""
    with ExitStack() as stack:
        settings, tasks, run_id, run_dir = prepare(args, settings, stack, in_ray=False)
        again = f"evokernel run --no-ray --resume {run_dir}"
        _stop_cleanly_on_sigterm(stack)
        if settings.llm.base_url is None:
            settings = _with_local_llm(settings, stack, one_operator_at_a_time=True)
        try:
            if args.resume:
                campaign, tasks = Campaign.resume(settings, run_dir)
            else:
                campaign = Campaign(settings, run_dir, run_id=run_id)
            asyncio.run(campaign.run(tasks))
            end: dict[str, Any] = {}
        except BankUnusable as exc:  # another writer took the bank after the check
            print(f"evokernel run: {exc}", file=sys.stderr)
            return 2
        except CampaignError as exc:
            end = {"stopped": str(exc)}
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the campaign recorded it in summary.json
            end = {"interrupted": True}
        late.ignore()  # the campaign has ended: a stop now must not cut its teardown or its report short
    return finish(run_dir, again, "single-process", **end)


def _run_concurrent(args: argparse.Namespace, settings: Settings, late: LateStops) -> int:
    """Every operator as a Ray task, over device-pinned pools (launch.ray_campaign.concurrent_campaign)."""
    from launch.ray_campaign.campaign_actors import BankRefused
    from launch.ray_campaign.concurrent_campaign import ConcurrentCampaign
    from npu_pool.devices import FakeDevices

    with ExitStack() as stack:
        settings, tasks, run_id, run_dir = prepare(args, settings, stack, in_ray=True)
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
            campaign.run(tasks)
            end: dict[str, Any] = {}
        except BankRefused as exc:  # another writer took the bank after the check
            print(f"evokernel run: {exc}", file=sys.stderr)
            return 2
        except CampaignError as exc:
            end = {"stopped": str(exc)}
        except KeyboardInterrupt:  # a stop the campaign could not absorb: recorded by finish()
            end = {"interrupted": True}
        late.ignore()
    return finish(run_dir, f"evokernel run --resume {run_dir}", "ray", **end)


def _stop_cleanly_on_sigterm(stack: ExitStack) -> None:
    """SIGTERM (a scheduler, `timeout`, `kill`, `ray job stop`) unwinds like Ctrl-C, so the local
    model server and Ray are stopped and the run folder is left consistent (summary.json marked
    interrupted, a resume hint), instead of dying on the spot. It is handed to whatever handles
    SIGINT at that moment: asyncio.run's handler cancels the single-process campaign's task, the
    default one raises KeyboardInterrupt. The Ray campaign keeps this handler over ray.init's
    (launch.ray_campaign.ray_session.connect_ray)."""

    def interrupt(signum: int, frame: Any) -> None:
        as_ctrl_c = signal.getsignal(signal.SIGINT)
        if callable(as_ctrl_c):
            as_ctrl_c(signal.SIGINT, frame)
        else:  # SIGINT ignored or left to the C default: still stop cleanly
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)

    def put_back() -> None:  # unless the end's own handler (LateStops) has taken over meanwhile
        if signal.getsignal(signal.SIGTERM) is interrupt:
            signal.signal(signal.SIGTERM, previous)

    stack.callback(put_back)


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
