"""The driver's Ray session: joining or starting the cluster, and telling whether it is still there.

`ray.init` replaces the caller's SIGTERM handler with one that exits on the spot; `connect_ray`
puts the caller's back, so `evokernel run` keeps its clean stop. A signal sent to the run's
whole process group (`timeout`, a shell's job control, systemd's default stop) also reaches the
GCS and raylet of a local instance this process started: from then on every call that needs
the GCS blocks, and Ray's core worker ends the process about 60 s later. `gcs_reachable` lets
the campaign's stop skip those calls and still leave its run folder finished.
"""

from __future__ import annotations

import signal
import socket
import threading
from typing import Any

import ray

from launch.campaign import CampaignError
from launch.config import Settings
from npu_pool.devices import FakeDevices, local_devices


def connect_ray(settings: Settings, fake: FakeDevices | None) -> bool:
    """Join or start the cluster; True when this call started (and must shut down) Ray."""
    if ray.is_initialized():
        return False
    address = settings.ray.address
    if fake is not None and address != "local":
        raise CampaignError("--fake-devices declares resources of a cluster started here: use --ray-address local")
    kwargs: dict[str, Any] = {"namespace": settings.ray.namespace, "log_to_driver": False}
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
            ray.init(address="local", **kwargs)  # a fresh instance, never another one on this machine
    else:
        with _keeping_sigterm_handler():
            ray.init(address=address, **kwargs)
    return True


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
