"""Run the worker for one candidate in a fresh confined child, within limits, and always return.

A warm server per backend (npu_pool.sandbox.warm_worker: torch imported once, started under
`unshare -rn` where the platform allows, so in a network namespace of its own, with a
scrubbed environment) forks one child per candidate. The child gets a private folder (its
working, temporary and scratch build directory, the only place it may write once built:
Landlock), may read only what npu_pool.sandbox.read_allow lists (Landlock), its own session and
PID namespace (nothing it starts outlives it), RLIMIT_DATA
and RLIMIT_CPU, and a wall-clock limit here that restarts when compilation ends. A hang, a
crash, an abort or a memory bomb comes back as a WorkerRun with its reason. Harness caches
the child measured come back in its result and are written here, outside the sandbox.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from npu_pool import harness_cache
from npu_pool.node_gate import NodeLock
from npu_pool.paths import cache_root
from npu_pool.protocol import WorkerRequest, WorkerResult
from npu_pool.sandbox import confinement, host_memory, leftovers, tree_limits
from npu_pool.sandbox.child_env import scrubbed_env
from npu_pool.sandbox.warm_worker import RunOrder, ServerConfinement

log = structlog.get_logger("npu_pool.sandbox.runner")

_POLL_S = 0.05


@dataclass
class WorkerRun:
    """What came back from one worker process."""

    result: WorkerResult | None
    returncode: int | None
    timed_out: bool
    stage: str
    stderr_tail: str
    wall_s: float
    sandbox: dict = field(default_factory=dict)
    tree_limit: str | None = None  # "process_limit", "out_of_memory" or "host_out_of_memory" (the machine's limit)


def _tail(path: Path, limit: int = 3000) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - limit))
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


def _read_stage(path: Path, last: str) -> str:
    try:
        return path.read_text() or last
    except OSError:
        return last


class WarmServerKilled(RuntimeError):
    """The warm server died of a signal while it started, having written nothing."""


class WarmServer:
    """One warm sandbox server (npu_pool.sandbox.warm_worker) per backend, environment and
    confinement, restarted if it dies. It talks over a socket pair only this object holds the
    other end of (no path: nothing else can reach the server), and how it confines candidates
    is fixed on its command line, never by an order."""

    def __init__(self, backend: str, extra_env: tuple[str, ...], isolate_network: bool, filesystem: bool = True,
                 pid_namespace: bool = True):
        self.backend, self.extra_env, self.isolate_network = backend, extra_env, isolate_network
        self.confinement = ServerConfinement(filesystem=filesystem, pid_namespace=isolate_network and pid_namespace,
                                             network_namespace=isolate_network)
        self.proc: subprocess.Popen | None = None
        self.channel: socket.socket | None = None
        self._pending = b""
        leftovers.sweep()  # folders of clients killed outright with their servers
        leftovers.start_janitor()  # and ours, once we are gone, however we go
        self.home = Path(tempfile.mkdtemp(prefix=leftovers.own_prefix(leftovers.WARM_PREFIX)))
        self._lock = threading.Lock()  # callers in threads must not start two servers

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout_s: float = 120.0) -> None:
        """Start the server; once more when something outside killed it while it started (a
        device actor restarted by Ray: Ray's sweep of a dead worker's children can reach a new
        worker's fresh server, seen as SIGKILL within a second of its start)."""
        for attempt in (1, 2):
            try:
                return self._start(timeout_s)
            except WarmServerKilled as exc:
                if attempt == 2:
                    raise RuntimeError(f"the warm sandbox server did not start: {exc}") from None
                log.warning("warm_server_killed_at_start", backend=self.backend, detail=str(exc))

    def _start(self, timeout_s: float) -> None:
        self.stop()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        cmd = [sys.executable, "-m", "npu_pool.sandbox.warm_worker", str(theirs.fileno()), str(self.home),
               self.backend, *self.confinement.argv()]
        if self.isolate_network:
            cmd = ["unshare", "-rn", *cmd]
        (self.home / "tmp").mkdir(parents=True, exist_ok=True)
        env = scrubbed_env(self.extra_env, self.home, self.home)
        try:
            with (self.home / "server.log").open("ab") as err:
                self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                             cwd=self.home, env=env, start_new_session=True, close_fds=True,
                                             pass_fds=(theirs.fileno(),))
        finally:
            theirs.close()  # the server's end lives in the server alone
        self.channel, self._pending = ours, b""
        ready = self._read_line(timeout_s)
        if ready != "ready":
            tail = _tail(self.home / "server.log")
            code = _exit_code_soon(self.proc)
            self.stop()
            if code is not None and code < 0 and not tail:  # killed from outside before it said a word
                raise WarmServerKilled(f"killed by signal {-code} before it was ready")
            raise RuntimeError(f"the warm sandbox server did not start: {tail[-600:] or 'no output'}")
        log.debug("warm_server_started", backend=self.backend, pid=self.proc.pid)

    def _read_line(self, timeout_s: float) -> str:
        """One line from the server, or "" at its end or after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.channel], [], [], left)[0]:
                return ""
            chunk = self.channel.recv(65536)
            if not chunk:
                return ""
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return line.decode(errors="replace").strip()

    def ensure_started(self) -> None:
        with self._lock:
            if not self.alive():
                self.start()

    def submit(self, order: RunOrder) -> int:
        """Fork a fresh child for `order`; its keeper's pid (restarts a dead server once)."""
        with self._lock:
            return self._submit(order)

    def _submit(self, order: RunOrder) -> int:
        for attempt in range(2):
            if not self.alive():
                self.start()
            try:
                self.channel.settimeout(30)
                self.channel.sendall(order.model_dump_json().encode() + b"\n")
                answer = json.loads(self._read_line(30) or "{}")
                if "pid" in answer:
                    return int(answer["pid"])
                raise RuntimeError(answer.get("error", "no answer"))
            except (OSError, ValueError, RuntimeError) as exc:
                log.warning("warm_server_failed", attempt=attempt + 1, error=str(exc)[:300])
                self.stop()
        raise RuntimeError("the warm sandbox server failed twice")

    def stop(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.proc is not None:
            _kill_group(self.proc)
            self.proc = None


_servers: dict[tuple[str, tuple[str, ...], bool, bool, bool], WarmServer] = {}


def warm_server(backend: str, extra_env: tuple[str, ...], isolate_network: bool, filesystem: bool = True,
                pid_namespace: bool = True) -> WarmServer:
    key = (backend, extra_env, isolate_network, filesystem, pid_namespace)
    if key not in _servers:
        _servers[key] = WarmServer(*key)
    return _servers[key]


@atexit.register
def stop_servers() -> None:
    for server in _servers.values():
        server.stop()
        shutil.rmtree(server.home, ignore_errors=True)
    _servers.clear()
    leftovers.sweep()  # and what clients killed outright left (a Ray campaign's device actors)


def run_worker(request: WorkerRequest, compile_timeout_s: float, run_timeout_s: float,
               extra_env: tuple[str, ...] = (), network_isolation: bool = True, policy: str = "require",
               node_lock: NodeLock | None = None, pid_namespace: bool = True) -> WorkerRun:
    """Run npu_pool.sandbox.worker on `request` in a child of the warm server; never raises for what
    the candidate does (confinement.SandboxUnavailable if the platform cannot confine it under `require`).
    `pid_namespace`: False where the backend's runtime fails in one (a subreaper sweeps instead)."""
    support = confinement.check_confinement(policy)
    isolate = network_isolation and confinement.network_namespace_available()
    server = warm_server(request.backend, extra_env, isolate, support["filesystem"] is not None, pid_namespace)
    server.ensure_started()  # before the folder: a server that knows no order could not remove it
    work_dir = Path(tempfile.mkdtemp(prefix=leftovers.own_prefix(leftovers.SANDBOX_PREFIX)))
    (work_dir / "tmp").mkdir()
    request = request.model_copy(update={"timing_slot": node_lock is not None and request.profile})
    (work_dir / "request.json").write_text(request.model_dump_json())
    stage_path, exit_path = work_dir / "stage.txt", work_dir / "exit.json"
    nonce = secrets.token_hex(16)
    cache_dir = Path(request.cache_dir)
    limits = request.limits
    group = tree_limits.create(limits.memory_mb, limits.processes)
    order = RunOrder(work_dir=str(work_dir), nonce=nonce, memory_mb=limits.memory_mb, cpu_s=limits.cpu_s,
                     processes=limits.processes, tree_groups=group.join_files() if group else [],
                     compile_writable=[str(cache_dir)],
                     readable=[str(cache_root()), request.task.path],  # torch.compile reads the task's source
                     env={"TMPDIR": str(work_dir / "tmp"), "TORCH_EXTENSIONS_DIR": str(cache_dir / "torch_extensions"),
                          "TORCHINDUCTOR_CACHE_DIR": str(work_dir / "inductor"),
                          # Triton writes its cache under ~/.triton, which the candidate may not write
                          "TRITON_HOME": str(work_dir / "triton"), "TRITON_CACHE_DIR": str(work_dir / "triton" / "cache")})
    started = time.monotonic()
    try:
        with node_lock.shared() if node_lock else contextlib.nullcontext():
            pid = server.submit(order)
            bound = group or tree_limits.Watchdog(pid, limits.memory_mb, limits.processes)
            stage, limit_hit, exclusive, tree_hit = _supervise(pid, stage_path, exit_path, compile_timeout_s,
                                                               run_timeout_s, node_lock, bound)
            if exclusive is not None:
                exclusive.release()
        tree_hit = tree_hit or (host_memory.oom_verdict(group) if group is not None else None)
    finally:
        if group is not None:
            group.remove()
    exit_record = harness_cache.read_json(exit_path)
    result = _read_result(work_dir / "result.json", nonce)
    if result is not None and result.cache_updates:
        harness_cache.apply(result.cache_updates, allowed=(cache_dir, cache_root()))
    run = WorkerRun(result=result, returncode=exit_record.get("returncode"), timed_out=limit_hit is not None, stage=stage,
                    tree_limit=tree_hit,
                    stderr_tail=_tail(work_dir / "stderr.log"), wall_s=time.monotonic() - started,
                    sandbox={"process": "fork of a warm server, own session", "memory_limit_mb": request.limits.memory_mb,
                             "memory_limit": "RLIMIT_DATA", "cpu_time_limit_s": request.limits.cpu_s,
                             "wall_limit_s": {"compile": compile_timeout_s, "run": run_timeout_s},
                             "wall_limit_hit": limit_hit,
                             "env": "allowlist", "network_namespace": isolate,
                             "own_network_namespace": exit_record.get("own_network_namespace"),
                             "network_isolated": result.network_isolated if result else None,
                             "filesystem": support["filesystem"] or "NOT CONFINED (no Landlock on this kernel)",
                             "reads": support["reads"] or "NOT CONFINED (no Landlock on this kernel)",
                             "processes": "pid namespace" if exit_record.get("pid_namespace") else "subreaper",
                             "process_limit": limits.processes,
                             "tree_limits": tree_limits.describe(group, exit_record.get("tree_groups")),
                             "leftover_processes_killed": exit_record.get("swept"),
                             **({"node_holds": node_lock.holds} if node_lock else {}),
                             **({"applied": result.confinement} if result and result.confinement else {})})
    shutil.rmtree(work_dir, ignore_errors=True)
    return run


# Stages before the candidate runs: the compile clock covers them (the worker goes startup ->
# device -> startup -> compile; "device" once started the 30 s run clock before a load_inline build)
BEFORE_RUN_STAGES = ("startup", "device", "compile")


def run_clock_starts(previous: str, current: str) -> bool:
    """Compilation is over when the worker leaves the stages before the run for another one."""
    return previous in BEFORE_RUN_STAGES and current not in BEFORE_RUN_STAGES


def _supervise(pid: int, stage_path: Path, exit_path: Path, compile_timeout_s: float, run_timeout_s: float,
               node_lock: NodeLock | None, bound: Any) -> tuple[str, str | None, Any, str | None]:
    """Watch one child until it ends, overruns its wall clock or its tree passes a bound (then
    kill it); holds the node exclusively while it times. (last stage, the wall-clock limit that
    killed it: "compile" or "run", else None; the exclusive hold or None; the tree's bound
    passed: "process_limit", "out_of_memory" or None)."""
    stage, exclusive = "startup", None
    deadline, limit = time.monotonic() + compile_timeout_s + run_timeout_s, "compile"
    while not exit_path.exists() and _exists(pid):
        current = _read_stage(stage_path, stage)
        if current != stage:
            if run_clock_starts(stage, current):
                deadline, limit = time.monotonic() + run_timeout_s, "run"  # compilation is over: the run clock starts
            stage = current
            if stage == "waiting for the node" and node_lock is not None and exclusive is None:
                waited = time.monotonic()
                exclusive = node_lock.exclusive()  # blocks while others verify or time here
                deadline += time.monotonic() - waited  # not the candidate's time
                (stage_path.parent / "go").write_text("")
        if time.monotonic() > deadline:
            _kill_pid_group(pid)
            return stage, limit, exclusive, None
        if (passed := bound.check()) is not None:
            _kill_pid_group(pid)
            return _read_stage(stage_path, stage), None, exclusive, passed
        _wait_for_exit(pid)
    return _read_stage(stage_path, stage), None, exclusive, None


def _wait_for_exit(pid: int) -> None:
    """Wait up to _POLL_S, less when the keeper exits (a pidfd, Linux 5.3+): a finished
    evaluation is seen at once instead of half a poll interval later on average."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # an older kernel or Python, or already reaped
        time.sleep(_POLL_S)
        return
    try:
        select.select([pidfd], [], [], _POLL_S)
    finally:
        os.close(pidfd)


def _exists(pid: int) -> bool:
    """The keeper is alive (a zombie until the server reaps it counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _kill_pid_group(pid: int) -> None:
    """SIGKILL the keeper's group; the runner dies with its keeper (and its PID namespace with it)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    end = time.monotonic() + 10
    while _exists(pid) and time.monotonic() < end:
        time.sleep(0.01)


def _exit_code_soon(proc: subprocess.Popen, wait_s: float = 2.0) -> int | None:
    """The exit code of a process whose output just ended; a killed process closes its pipe a
    moment before it can be reaped, so poll() alone can still say it runs."""
    try:
        return proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        return None


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill a process's whole group (and reap it)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        log.warning("process did not die after SIGKILL", pid=proc.pid)


def _read_result(path: Path, nonce: str) -> WorkerResult | None:
    try:
        result = WorkerResult.model_validate_json(path.read_text())
    except OSError:
        return None
    except ValueError as exc:  # a result this harness cannot read: say why (another harness's worker, a forgery)
        log.warning("worker_result_unreadable", error=str(exc)[:500])
        return None
    if not secrets.compare_digest(result.nonce, nonce):
        log.warning("ignoring a worker result without the right nonce (forged by the candidate?)")
        return None
    return result
