"""The seccomp filter on its own, in a forked child of the test process: what it refuses and
what it lets through (npu_pool.sandbox.seccomp)."""

from __future__ import annotations

import json
import os
import socket
import subprocess

import pytest

from npu_pool.sandbox import seccomp

pytestmark = pytest.mark.skipif(not seccomp.supported(), reason="no seccomp filter for this machine")


def _in_child(probe) -> dict:
    """Run `probe()` in a forked child (a filter is for good) and return what it reported."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            report = probe()
        except BaseException as exc:  # noqa: BLE001 - the report says what broke
            report = {"error": repr(exc)}
        os.write(write, json.dumps(report).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(text)


def _works(call) -> bool | str:
    try:
        result = call()
        for item in result if isinstance(result, tuple) else (result,):
            if hasattr(item, "close"):
                item.close()
        return True
    except PermissionError:
        return False
    except OSError as exc:
        return f"errno {exc.errno}"


def test_unix_sockets_io_uring_and_namespaces_are_refused_the_rest_passes():
    def probe():
        seccomp.confine_calls()
        return {
            "unix": _works(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)),
            "inet": _works(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)),
            "stream_pair": _works(lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)),
            "datagram_pair": _works(lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)),
            "exec": _works(lambda: subprocess.run(["true"], check=True)),
            "unshare": _works(lambda: _unshare_net()),
        }

    assert _in_child(probe) == {"unix": False, "inet": True, "stream_pair": True, "datagram_pair": False,
                                "exec": True, "unshare": False}


def test_after_the_seal_no_program_runs():
    def probe():
        seccomp.confine_calls()
        before = _works(lambda: subprocess.run(["true"], check=True))
        seccomp.forbid_exec()
        return {"before": before, "after": _works(lambda: subprocess.run(["true"], check=True)),
                "os_execv": _works(lambda: os.execv("/bin/true", ["true"]))}

    assert _in_child(probe) == {"before": True, "after": False, "os_execv": False}


def _unshare_net():
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x40000000) != 0:
        errno = ctypes.get_errno()
        raise PermissionError(errno, os.strerror(errno)) if errno == 1 else OSError(errno, os.strerror(errno))


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_filter_assembles_for_each_machine(machine):
    program = seccomp.build_filter(seccomp.ALWAYS_DENIED, unix_sockets=True, machine=machine)
    assert len(program) % 8 == 0 and 10 < len(program) // 8 < 255
    assert seccomp.build_filter(seccomp.EXEC_DENIED, unix_sockets=False, machine=machine)
