"""Ports for the Ray clusters tests and benchmarks start on this machine, beside any other Ray here.

`ray.cluster_utils.Cluster` binds its head's dashboard to 8265 and the head's dashboard agent to
52365 without retrying (`ray.init(address="local")` retries; Cluster does not). With another Ray
instance on the machine (a campaign, a benchmark) holding them, the test cluster's head starts
without a dashboard, and the state API (`ray.util.state.list_actors`) then fails after 40 s.
Ports the kernel hands out free avoid that."""

from __future__ import annotations

import socket
from typing import Any


def free_port() -> int:
    """A TCP port nothing on loopback listens on now (the kernel's pick)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def head_node_args(**args: Any) -> dict[str, Any]:
    """`Cluster(head_node_args=...)` with the dashboard and its agent on free ports; `args` win."""
    return {"dashboard_port": free_port(), "dashboard_agent_listen_port": free_port(), **args}
