"""The driver's Ray session: joining or starting the cluster, and telling whether it is still there.

`ray.init` replaces the caller's SIGTERM handler with one that exits on the spot; `connect_ray`
puts the caller's back, so `evokernel run` keeps its clean stop. A signal sent to the run's
whole process group (`timeout`, a shell's job control, systemd's default stop) also reaches the
GCS and raylet of a local instance this process started: from then on every call that needs
the GCS blocks, and Ray's core worker ends the process about 60 s later. `gcs_reachable` lets
the campaign's stop skip those calls and still leave its run folder finished.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

import ray

from launch.campaign import CampaignError
from launch.config import Settings
from npu_pool.devices import FakeDevices, local_devices


def connect_ray(settings: Settings, fake: FakeDevices | None, job_name: str | None = None) -> bool:
    """Join or start the cluster; True when this call started (and must shut down) Ray. The
    dashboard shows the driver as a job named `job_name`; where the address is printed, how to
    sign in and the campaign's Grafana dashboard come with it (`announce_dashboard`)."""
    if ray.is_initialized():
        return False
    address = settings.ray.address
    if fake is not None and address != "local":
        raise CampaignError("--fake-devices declares resources of a cluster started here: use --ray-address local")
    kwargs: dict[str, Any] = {"namespace": settings.ray.namespace, "log_to_driver": False}
    if job_name:
        kwargs["job_config"] = ray.job_config.JobConfig(metadata={"job_name": job_name})
    if address == "local":
        if fake is not None:
            kwargs.update(fake.ray_init_kwargs())
        else:
            found = local_devices()
            if found.npu:
                kwargs["resources"] = {"NPU": found.npu}
            if found.cuda:
                kwargs["num_gpus"] = found.cuda
        with _keeping_sigterm_handler():
            context = ray.init(address="local", **kwargs)  # a fresh instance, never another one on this machine
    else:
        with _keeping_sigterm_handler():
            context = ray.init(address=address, **kwargs)
    announce_dashboard(getattr(context, "dashboard_url", None), local=address == "local")
    return True


def announce_dashboard(dashboard_url: str | None, local: bool, stream: TextIO | None = None) -> None:
    """Say where the dashboard is and how to get in (Ray's token auth is on by default for a
    local instance: the token itself is a secret and never printed), and put the campaign's
    Grafana dashboard into this session's Grafana provisioning folder."""
    from launch.dashboards import install_grafana_dashboard

    stream = stream or sys.stderr
    if not dashboard_url:
        return
    lines = [f"Ray dashboard: http://{dashboard_url.removeprefix('http://')}"]
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        lines.append("  it asks for Ray's token: `ray get-auth-token` prints it (saved in ~/.ray/auth_token)")
    lines.append("  metrics: scripts/prometheus.sh, then Grafana with this session's grafana.ini "
                 "(docs/scale_out.md, 'Watching a campaign')")
    if local:
        lines.append("  this local Ray stops with the run; RUN_DIR/report/report.html stays, refreshed as operators finish")
    print("\n".join(lines), file=stream, flush=True)
    try:
        session_dir = ray._private.worker._global_node.get_session_dir_path()  # noqa: SLF001 - no public getter
    except AttributeError:
        return
    install_grafana_dashboard(session_dir)


class _keeping_sigterm_handler:
    """Around `ray.init`: put back a SIGTERM handler the caller installed. Ray installs one that
    exits on the spot (and its core worker a fatal-signal handler underneath), which would skip
    the clean stop `evokernel run` makes of SIGTERM: no summary marked interrupted, no resume
    hint, the local model server left running. Without a handler of the caller's, Ray's stays."""

    def __enter__(self) -> None:
        main = threading.current_thread() is threading.main_thread()
        self.previous = signal.getsignal(signal.SIGTERM) if main else None

    def __exit__(self, *exc: object) -> None:
        if callable(self.previous) or self.previous == signal.SIG_IGN:
            signal.signal(signal.SIGTERM, self.previous)


def reassert_stop_handlers() -> None:
    """The stop signals' Python handlers installed again at the C level. The driver's core worker,
    as it shuts down, puts SIGTERM's C-level disposition back to the default (Ray's failure-signal
    handler uninstalled), under Python's feet: Python still names its handler, but a SIGTERM then
    killed the process on the spot (exit -15, no summary of the end; issue 63)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(sig)
        if callable(handler) or handler == signal.SIG_IGN:
            signal.signal(sig, handler)


def shutdown_ray() -> None:
    """`ray.shutdown` of the instance this process started, in two steps with the stop handlers put
    back between them: the driver's disconnect (where the C-level reset happens), then the local
    instance's processes stopped (a second or more). In one step a SIGTERM in that second killed the
    run (exit -15)."""
    node = getattr(ray._private.worker, "_global_node", None)  # noqa: SLF001 - no public seam between the two
    if node is not None:
        ray._private.worker._global_node = None  # noqa: SLF001 - ray.shutdown then only disconnects
    try:
        ray.shutdown()
    finally:
        reassert_stop_handlers()
    if node is not None:
        if node.is_head():
            node.destroy_external_storage()
        node.kill_all_processes(check_alive=False, allow_graceful=True)


def gcs_reachable(timeout_s: float = 2.0) -> bool:
    """Whether the connected cluster's GCS still accepts connections (False when not connected)."""
    if not ray.is_initialized():
        return False
    return _accepts(ray.get_runtime_context().gcs_address, timeout_s)


# -- what a run's own Ray leaves, and losing its head ------------------------------------------

_RAY_COMMANDS = ("ray::", "ray-dashboard-")  # Ray's workers and agents, its dashboard's modules (set titles)


def _ray_process(pid: int) -> tuple[str, str] | None:
    """(start time, command line) of PID where it is one of Ray's processes; else None."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        started = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
    if command.startswith(_RAY_COMMANDS) or "/site-packages/ray/" in command or "/ray/core/src/" in command:
        return started, command
    return None


def _descendants(pid: int) -> list[int]:
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.append(child)
                    frontier.append(child)
    return found


class RayProcesses:
    """The processes of the Ray instance this driver started (its GCS, raylet, dashboard and their
    agents, the workers), noted while they run. `ray.shutdown` kills
    what it started itself, but the raylet's children (the dashboard and runtime-env agents)
    outlived abnormal ends as orphans for minutes (issue 63): `end_survivors` ends whatever of
    them is still there, by pid and start time (a pid reused meanwhile is left alone)."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[str, str]] = {}

    def note(self) -> None:
        """Note the processes of this driver's own Ray node: those it started (its GCS, raylet,
        dashboard, monitors: `all_processes` of Ray's node object) and their descendants that are
        Ray's (workers, agents); never another Ray instance's, even one of this same process."""
        node = getattr(ray._private.worker, "_global_node", None)  # noqa: SLF001 - no public view of it
        roots = [info.process.pid for infos in (getattr(node, "all_processes", None) or {}).values()
                 for info in infos if getattr(info, "process", None) is not None]
        for pid in [*roots, *(child for root in roots for child in _descendants(root))]:
            if pid not in self.seen and (found := _ray_process(pid)) is not None:  # (a fork before its exec
                self.seen[pid] = found  # shows the parent's command: not Ray's, noted at the next look)

    def survivors(self) -> list[int]:
        return [pid for pid, (started, _) in self.seen.items()
                if (now := _ray_process(pid)) is not None and now[0] == started]

    def end_survivors(self, grace_s: float = 3.0) -> list[str]:
        """SIGTERM, then SIGKILL after GRACE_S, to every noted process still alive after GRACE_S of
        its own (Ray's workers go a moment after their raylet); the commands of those it ended."""
        import time

        def left_after_grace() -> list[int]:
            deadline = time.monotonic() + grace_s
            while (left := self.survivors()) and time.monotonic() < deadline:
                time.sleep(0.1)
            return left

        left = left_after_grace()
        ended = [self.seen[pid][1][:80] for pid in left]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in left:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            if not (left := left_after_grace()):
                break
        return ended


GCS_LOST_AFTER_S = 3.0  # the GCS refused connections this long: the head is gone, not busy


class GcsWatch:
    """A thread that asks, every POLL_S, whether the cluster's GCS still accepts connections; once
    it has refused for GCS_LOST_AFTER_S it calls `on_lost(address)` (once). Ray's core worker ends
    a driver that lost its GCS about 60 s later with a C++ line and exit 1 (issue 63): the campaign
    must have ended cleanly before that."""

    def __init__(self, on_lost: Any, poll_s: float = 1.0, lost_after_s: float = GCS_LOST_AFTER_S,
                 address: str | None = None):
        self.on_lost, self.poll_s, self.lost_after_s = on_lost, poll_s, lost_after_s
        if address is None:  # the connected cluster's
            address = ray.get_runtime_context().gcs_address if ray.is_initialized() else ""
        self.address = address
        self.lost_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="gcs-watch", daemon=True)

    def start(self) -> GcsWatch:
        if self.address:
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        import time

        failing_since: float | None = None
        while not self._stop.wait(self.poll_s):
            if _accepts(self.address, timeout_s=self.poll_s):
                failing_since = None
                continue
            failing_since = failing_since or time.monotonic()
            if time.monotonic() - failing_since >= self.lost_after_s:
                self.lost_at = time.monotonic()
                self.on_lost(self.address)
                return


def _accepts(address: str, timeout_s: float) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False
