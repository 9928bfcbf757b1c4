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


def gcs_reachable(timeout_s: float = 2.0) -> bool:
    """Whether the connected cluster's GCS still accepts connections (False when not connected)."""
    if not ray.is_initialized():
        return False
    host, _, port = ray.get_runtime_context().gcs_address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False
