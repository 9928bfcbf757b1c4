"""The round-three escape can never come back: a candidate cannot reach the warm server, run
a program, open a unix socket or write outside its folder, whatever the static gate missed.

The hostile kernel (tests/npu_pool/hostile/escape_through_warm_server.cpp) tries every route of
the escape found on 6784d39: the server's socket through /proc/*/net/unix or a guess in /tmp, a
unix socket opened through raw machine code, a run order asking for no confinement, a shell,
a datagram socket pair, ptrace of its parent, io_uring and a plain write outside its folder.
Each route that works adds its bit to the kernel's output, so the verdict is feasible only
where every route failed. It runs here with the static gate off (sandboxed_gates): runtime
confinement is the boundary. (Checked by hand on 2026-12-06: with the seccomp filter off the
verdict is infeasible with offset 548 = 4 + 32 + 512: a unix socket, a datagram pair and
io_uring got through; the shell and execve stayed refused by Landlock's withheld execute
right, ptrace by Landlock's domain.)
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

import pytest
from pydantic import ValidationError

from npu_pool.backends import get_backend
from npu_pool.sandbox import runner
from npu_pool.sandbox.confinement import landlock_abi, network_namespace_available
from npu_pool.sandbox.warm_worker import RunOrder
from npu_pool.verdict import Candidate
from npu_pool.verifier import sandboxed_gates

from ..harness_support import fixture_task, harness_config

HOSTILE = Path(__file__).parents[1] / "hostile" / "escape_through_warm_server.cpp"
needs_landlock = pytest.mark.skipif(landlock_abi() < 1, reason="no Landlock on this kernel")


@pytest.fixture(scope="module")
def relu_task():
    return fixture_task("huge_relu")


def _escape_source(marker: Path) -> str:
    source = HOSTILE.read_text()
    assert '#define EVK_MARKER "/tmp/evokernel-escape-marker"' in source
    return source.replace('"/tmp/evokernel-escape-marker"', json.dumps(str(marker)))


@needs_landlock
def test_every_route_of_the_escape_fails_with_the_gate_off(relu_task, tmp_path):
    marker = tmp_path / f"escaped-{secrets.token_hex(4)}"
    config = harness_config(run_timeout_s=30.0)
    verdict = sandboxed_gates(relu_task, Candidate(source=_escape_source(marker), format="kernel"), config,
                              get_backend("cpu"), False)[0]
    assert verdict.gate != "compile", verdict.details  # it built: the routes were really tried
    assert verdict.feasible, f"a route of the escape worked (its bits are the output's offset): {verdict.details}"
    assert not marker.exists()
    applied = verdict.sandbox["applied"]
    assert applied["calls"].startswith("seccomp") and applied["calls_after_build"].startswith("seccomp")
    assert applied["execution"] == "allowed"  # during the build (the compiler); forbidden at the seal:
    assert verdict.sandbox["own_network_namespace"] is network_namespace_available()


def test_an_order_cannot_ask_for_less_confinement():
    base = {"work_dir": "/tmp/x", "nonce": "n", "memory_mb": 1, "cpu_s": 1, "compile_writable": [], "env": {}}
    RunOrder.model_validate(base)
    for relaxing in ({"filesystem": False}, {"pid_namespace": False}, {"network_namespace": False}):
        with pytest.raises(ValidationError):
            RunOrder.model_validate(base | relaxing)


@needs_landlock
def test_the_warm_server_has_no_path_to_connect_to(relu_task):
    """Its only channel is a socket pair: no socket of the server's network namespace has a path,
    and nothing named server.sock exists in its folder."""
    config = harness_config(run_timeout_s=30.0)
    sandboxed_gates(relu_task, Candidate(source=_escape_source(Path("/nonexistent/x")), format="kernel"), config,
                    get_backend("cpu"), False)
    servers = [s for s in runner._servers.values() if s.alive()]
    assert any(s.confinement.filesystem for s in servers)
    for server in servers:
        listed = Path(f"/proc/{server.proc.pid}/net/unix").read_text().splitlines()[1:]
        assert [line for line in listed if "/" in line.split()[-1]] == []
        assert not list(server.home.glob("*.sock"))
        cmdline = Path(f"/proc/{server.proc.pid}/cmdline").read_bytes().split(b"\0")
        # fixed when it started, from the trusted side (a server of an earlier test may run without Landlock)
        assert f"--filesystem={'on' if server.confinement.filesystem else 'off'}".encode() in cmdline
        assert os.path.isdir(server.home)
