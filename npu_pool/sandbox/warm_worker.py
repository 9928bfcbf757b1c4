"""The warm sandbox server: `python -m npu_pool.sandbox.warm_worker SOCKET BACKEND`.

One per device worker. It imports torch and the harness once and never runs candidate
code: for each request it forks a fresh child, so a candidate starts in milliseconds
instead of paying a torch import, and nothing one candidate changes (files, processes,
threads, module state) reaches the next. It never initialises an accelerator runtime
(CUDA and CANN contexts do not survive a fork): the child does that itself.

Each candidate gets three processes. The *keeper* (forked from the server) enters a new PID
namespace where it can, or becomes a child subreaper where it cannot, and forks the
namespace's *init*, which forks the *runner*. When the runner ends, init reports its exit
status and ends, and the kernel kills every process left in the namespace; the keeper
sweeps whatever is left elsewhere and writes `exit.json` in the sandbox folder. The
*runner* closes inherited descriptors, moves into the sandbox folder, confines reads and
writes with Landlock (npu_pool.sandbox.read_allow says what it may read), sets its resource limits
and runs npu_pool.sandbox.worker's gates.

Trust boundary (docs/harness.md, "The warm server's trust boundary"): the server has no
path anyone could connect to. Its client starts it with one end of a socket pair (no name in
the file system, no entry a candidate could find in /proc/net/unix) and keeps the other; the
keeper closes the server's end before anything else, and the runner closes every inherited
descriptor. How a candidate is confined (Landlock, the PID and network namespaces, seccomp)
is fixed by the server's command line when it starts, from the trusted side's settings: an
order names only the candidate's folder, its limits, its cgroup files and its variables, and
an order with any other field is refused.

Protocol: the client writes one JSON line (RunOrder) on the pair; the server answers one line
{"pid": keeper_pid} (or {"error": ...}). Nothing outlives the process that started
the server: the server notices its parent's death (or the pair's end) within 0.2 s and ends every keeper before it exits
(SIGTERM: the keeper kills its init, sweeps its orphans and its group; then SIGKILL to the
group), and each keeper has the kernel send it that SIGTERM when the server dies
(PR_SET_PDEATHSIG), init and the runner SIGKILL when their parent dies, so a server killed
outright takes them along too.
`python -m npu_pool.sandbox.warm_worker --read-rules BACKEND` prints the read allow-list (doctor).
"""

from __future__ import annotations

import importlib
import json
import os
import select
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from npu_pool.paths import cache_root
from npu_pool.sandbox import confinement, seccomp
from npu_pool.sandbox.leftovers import WARM_PREFIX
from npu_pool.sandbox.read_allow import accelerator_nodes, read_allow_list


class ServerConfinement(BaseModel):
    """How every candidate of one server is confined: fixed when the server starts."""

    filesystem: bool  # confine reads, writes and execution with Landlock
    pid_namespace: bool  # a PID namespace per candidate (else: a subreaper sweep)
    network_namespace: bool  # a network namespace per candidate (the server is in its own user namespace)

    def argv(self) -> list[str]:
        return [f"--{name.replace('_', '-')}={'on' if value else 'off'}" for name, value in self.model_dump().items()]

    @classmethod
    def from_argv(cls, argv: list[str]) -> ServerConfinement:
        given = dict(arg[2:].split("=", 1) for arg in argv if arg.startswith("--") and "=" in arg)
        return cls(**{name: given.get(name.replace("_", "-")) == "on" for name in cls.model_fields})


class RunOrder(BaseModel):
    """What one sandboxed run needs from the server: no field can change how it is confined."""

    model_config = ConfigDict(extra="forbid")

    work_dir: str
    nonce: str
    memory_mb: int
    cpu_s: int
    processes: int = 1024  # RLIMIT_NPROC
    tree_groups: list[str] = []  # cgroup.procs files the keeper joins before it forks (npu_pool.sandbox.tree_limits)
    compile_writable: list[str]  # writable while the candidate builds (its build cache), then sealed
    readable: list[str] = []  # read-only extras: the harness caches
    env: dict[str, str]  # per-run variables (TMPDIR, caches)


def _import_without_driver(module_name: str) -> None:
    """Import `module_name` with torch.cuda.is_available answering True without asking the driver.
    torch.utils.cpp_extension asks it at import on a CUDA build of torch that finds a toolkit (only
    to print a warning); by default that is cudaGetDeviceCount, which runs cuInit, and CUDA then
    fails in every child the server forks ("initialization error")."""
    import torch

    real = torch.cuda.is_available
    torch.cuda.is_available = lambda: True
    try:
        importlib.import_module(module_name)
    finally:
        torch.cuda.is_available = real


def _preload(backend: str) -> None:
    """Import what every child needs, so children start warm; no device runtime is touched."""
    import torch  # noqa: F401

    _import_without_driver("torch.utils.cpp_extension")

    from npu_pool import build_cache  # noqa: F401
    from npu_pool.backends import REGISTRY, get_backend
    from npu_pool.gates import correctness, profiler  # noqa: F401
    from npu_pool.sandbox import worker  # noqa: F401
    from npu_pool.tasks import sizing  # noqa: F401

    if backend == "cpu":
        cpu = get_backend(backend)
        # Build keys hold the compiler's identity and what -march=native means: asked here once
        # (functools.cache), not by two compiler runs in every child (0.03-0.07 s a candidate).
        cpu.toolchain_identity()
        build_cache.compiler_identity(cpu.compiler), build_cache.host_target(cpu.compiler), build_cache.host_target()
    else:  # import only: constructing it asks the driver about devices, and cuInit does not survive fork
        module_name, class_name = REGISTRY[backend].split(":")
        getattr(importlib.import_module(module_name), class_name).warm_up()


def serve(channel_fd: int, home: str, backend: str, confined: ServerConfinement) -> None:
    parent = os.getppid()
    _preload(backend)
    channel = socket.socket(fileno=channel_fd)
    try:
        channel.sendall(b"ready\n")
    except OSError:  # our client died while we started: the loop below ends at once and cleans up
        pass
    keepers: set[int] = set()
    folders: set[str] = set()  # sandbox folders of our orders: their client may die before it removes them
    pending = b""
    while os.getppid() == parent:  # orphaned: the device worker is gone, so are we
        readable, _, _ = select.select([channel], [], [], 0.2)
        if readable:
            chunk = channel.recv(65536)
            if not chunk:  # the client closed its end: it is gone or stopping us
                break
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                try:
                    pid, work_dir = _accept(line, channel, confined)
                    keepers.add(pid)
                    folders = {f for f in folders if os.path.isdir(f)} | {work_dir}
                    _answer(channel, {"pid": pid})
                except Exception as exc:  # a broken order never takes the server down
                    _answer(channel, {"error": f"{type(exc).__name__}: {exc}"})
        _reap(keepers)
    _kill_keepers(keepers)
    _remove_leftovers(folders, Path(home))


def _remove_leftovers(folders: set[str], home: Path) -> None:
    """Our client died (a device actor killed by Ray, a kill -9) without its atexit cleanup: the
    sandbox folders it had not removed yet, and our own home (`evokernel-warm-*`), go with us."""
    import shutil

    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    if home.name.startswith(WARM_PREFIX):
        shutil.rmtree(home, ignore_errors=True)


def _kill_keepers(keepers: set[int], grace_s: float = 2.0) -> None:
    """Our parent is gone: every candidate goes with us. Each keeper is asked first (SIGTERM:
    it kills and sweeps its descendants, see _end_keeper), then its group is killed."""
    for pid in keepers:
        _signal(pid, signal.SIGTERM, group=False)
    deadline = time.monotonic() + grace_s
    while keepers and time.monotonic() < deadline:
        _reap(keepers)
        time.sleep(0.02)
    for pid in keepers:
        _signal(pid, signal.SIGKILL, group=True)
    _reap(keepers)


def _signal(pid: int, sig: int, group: bool) -> None:
    try:
        (os.killpg if group else os.kill)(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _accept(line: bytes, channel: socket.socket, confined: ServerConfinement) -> tuple[int, str]:
    order = RunOrder.model_validate_json(line)
    server = os.getpid()
    pid = os.fork()
    if pid == 0:  # the keeper: never returns
        try:
            channel.close()  # first of all: no descendant of ours may hold the server's end
            _keeper(order, server, confined)
        finally:
            os._exit(70)
    return pid, order.work_dir


def _answer(conn: socket.socket, message: dict[str, Any]) -> None:
    try:
        conn.sendall((json.dumps(message) + "\n").encode())
    except OSError:
        pass


def _reap(keepers: set[int]) -> None:
    for pid in list(keepers):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            keepers.discard(pid)


def _keeper(order: RunOrder, server: int, confined: ServerConfinement) -> None:
    os.setsid()  # the client kills this whole group at its deadline
    signal.signal(signal.SIGTERM, _end_keeper)
    # The server (single-threaded: the thread that forked us) dies, however: we end, taking all along.
    confinement.die_with_parent(signal.SIGTERM)
    if os.getppid() != server:  # it died before the line above took effect
        _end_keeper()
    work = Path(order.work_dir)
    joined = _join_groups(order.tree_groups)  # before any fork: everything the candidate starts is in them
    # A network namespace of the candidate's own: what it could see of one (/proc/self/task/*/net)
    # lists its own sockets only, never the server's or its neighbours'.
    own_network = confined.network_namespace and confinement.enter_network_namespace()
    namespace = confined.pid_namespace and confinement.enter_pid_namespace()
    if not namespace:
        confinement.become_subreaper()
    started = time.monotonic()
    status_read, status_write = os.pipe()
    init = os.fork()
    if init == 0:
        try:
            os.close(status_read)
            _init(order, confined, namespace, status_write)
        finally:
            os._exit(71)
    os.close(status_write)
    with os.fdopen(status_read) as pipe:
        reported = pipe.read().strip()
    _, status = os.waitpid(init, 0)
    swept = confinement.kill_children(os.getpid())  # a namespace is already empty; a subreaper sweeps
    code = int(reported) if reported else os.waitstatus_to_exitcode(status)
    record = {"returncode": code, "pid_namespace": namespace, "own_network_namespace": own_network,
              "swept": swept, "tree_groups": joined,
              "runner_s": round(time.monotonic() - started, 4)}
    tmp = work / "exit.json.tmp"
    tmp.write_text(json.dumps(record))
    os.replace(tmp, work / "exit.json")
    os._exit(0)


def _join_groups(files: list[str]) -> str:
    """Move this process into the candidate's control groups; what happened, for the record."""
    for file in files:
        try:
            Path(file).write_text("0")
        except OSError as exc:
            return f"not joined ({file}: {exc.strerror})"
    return "joined" if files else "none"


def _end_keeper(*_: Any) -> None:
    """SIGTERM to a keeper (its server ended or died): kill init (and with it the PID
    namespace) and, as a subreaper, every orphan re-parented to us, then our group, then us."""
    for _ in range(3):  # orphans reach a subreaper only once their parent has died
        confinement.kill_children(os.getpid())
        time.sleep(0.05)
    try:
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(73)


def _init(order: RunOrder, confined: ServerConfinement, namespace: bool, status_write: int) -> None:
    """Init of the candidate's PID namespace: runs the runner as its child (the kernel ignores
    default-action signals sent to an init, so a runner that is init could not die of its
    per-call SIGALRM), reaps orphans, reports the runner's exit and ends the namespace."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the keeper's handler is the keeper's alone
    confinement.die_with_parent()
    runner = os.fork()
    if runner == 0:
        try:
            confinement.die_with_parent()
            _runner(order, confined, namespace)
        finally:
            os._exit(71)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(0)
        if pid == runner:
            os.write(status_write, str(os.waitstatus_to_exitcode(status)).encode())
            os._exit(0)  # as init: every process left in the namespace dies with us


def _runner(order: RunOrder, confined_by: ServerConfinement, namespace: bool) -> None:
    work = Path(order.work_dir)
    os.chdir(work)
    out = os.open(work / "stdout.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    err = os.open(work / "stderr.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.closerange(3, 65536)  # anything inherited: out of reach (the keeper closed the server's end)
    os.environ.update(order.env)
    sys.argv = sys.argv[:1]  # the server's command line (its folder) is nothing the candidate needs
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    confined: dict[str, Any] = {"pid_namespace": namespace, "subreaper": not namespace}
    from npu_pool.sandbox import heap_poison, worker

    def seal() -> None:
        """After the build: only the sandbox folder (and this process's thread folders) stays
        writable, and no program may be executed (Landlock and seccomp both)."""
        if confined_by.filesystem:
            confinement.restrict_writes([work, *own_threads], device_nodes, executable=False)
            confined["writable_after_build"] = [str(p) for p in (work, *own_threads)]
        confined["calls_after_build"] = seccomp.forbid_exec()

    device_nodes = ("/dev/null", *(str(p) for p in accelerator_nodes()))
    # This process's own /proc/<pid>/task: the CUDA driver's cuInit writes beneath it (its helper
    # threads' names) and returns 304 (CUDA_ERROR_OPERATING_SYSTEM) where Landlock forbids that
    # (measured on an H100, driver 580.159, 2026-11-25). Other processes' folders stay unreadable.
    own_threads = [Path(os.path.realpath("/proc/self")) / "task"]
    if confined_by.filesystem:  # reads for good, writes to the build cache until the build is over
        writable = [work, *own_threads, *(Path(p) for p in order.compile_writable)]
        readable = read_allow_list([*writable, *order.readable, cache_root()])
        confined.update(confinement.restrict(writable, readable, device_nodes))
    confined["calls"] = seccomp.confine_calls()  # no unix sockets, io_uring, ptrace, namespaces, ...
    # fresh heap is 0x7f, freed heap 0x80, until the timed calls: an uninitialised read shows (heap_poison)
    confined["heap"] = "poisoned until profiling" if heap_poison.poison_heap() else "not poisoned (no mallopt)"
    worker.run_child(str(work / "request.json"), str(work / "result.json"), str(work / "stage.txt"),
                     order.nonce, order.memory_mb, order.cpu_s, order.processes, seal, confined)


def read_rules(backend: str) -> list[str]:
    """The read allow-list a runner of this server gets (its own folder and caches aside)."""
    _preload(backend)
    own = f"/proc/{os.getpid()}/"
    return [("/proc/self/" + str(p)[len(own):]) if str(p).startswith(own) else str(p)
            for p in read_allow_list([cache_root()])]


def main(argv: list[str]) -> None:
    """`--read-rules BACKEND`, or `CHANNEL_FD HOME BACKEND --filesystem=on|off --pid-namespace=on|off
    --network-namespace=on|off` (the client's command line: runner.WarmServer)."""
    if argv[:1] == ["--read-rules"]:
        print(json.dumps(read_rules(argv[1] if len(argv) > 1 else "cpu")))
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the campaign's; the client stops us
    serve(int(argv[0]), argv[1], argv[2], ServerConfinement.from_argv(argv[3:]))


if __name__ == "__main__":
    main(sys.argv[1:])
