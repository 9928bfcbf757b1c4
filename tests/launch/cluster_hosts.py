"""What is on the three namespace hosts of tests/launch/test_ray_up.py: whether they can be made
here, and which processes (Ray's, SSH sessions) are left in them or reach them after `ray down`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

NAMESPACES = ("evk46-head", "evk46-w1", "evk46-w2")


def can_make_hosts() -> str | None:
    """Why the hosts cannot be made here, or None."""
    if sys.platform != "linux" or os.geteuid() != 0:
        return "needs root on Linux (network and mount namespaces)"
    probe = subprocess.run(["ip", "netns", "add", "evk46-probe"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot create a network namespace: {probe.stderr.strip()}"
    subprocess.run(["ip", "netns", "delete", "evk46-probe"], capture_output=True)
    return None


def host_process(cmdline: str) -> bool:
    """Each host's own: its namespace holder, its PID 1 (local_cluster's NODE_INIT) and its
    listening sshd (which names itself `sshd: ... [listener] ...`)."""
    return cmdline.startswith(("unshare", "/usr/sbin/sshd -D")) or "node_init.py" in cmdline or "[listener]" in cmdline


def left_in_hosts(timeout_s: float = 150) -> dict[str, list[str]]:
    """Processes other than each host's own still in the hosts (Ray's, SSH sessions and their
    shared connections, which end some seconds after their last use), after waiting up to
    timeout_s for them to go; {} when none."""
    def others() -> dict[str, list[str]]:
        found = {ns: [c for c in cmds if not host_process(c)] for ns, cmds in in_namespaces().items()}
        return {ns: cmds for ns, cmds in found.items() if cmds}

    return gone(others, timeout_s)


def ssh_to_hosts(timeout_s: float = 90) -> list[str]:
    """This machine's SSH clients (the launcher's shared connections) to the hosts, after waiting up to
    timeout_s for them to end; [] when none."""
    return gone(lambda: subprocess.run(["pgrep", "-af", r"ssh.*10\.213\.46\."], capture_output=True,
                                        text=True).stdout.splitlines(), timeout_s)


def gone(found, timeout_s: float):
    deadline = time.monotonic() + timeout_s
    while (left := found()) and time.monotonic() < deadline:
        time.sleep(2)
    return left


def in_namespaces() -> dict[str, list[str]]:
    """The command lines of every process in the test's namespaces."""
    found = {}
    for ns in NAMESPACES:
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        lines = []
        for pid in pids:
            try:
                lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip())
            except OSError:
                pass
        found[ns] = lines
    return found
