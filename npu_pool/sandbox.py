"""Run the worker for one candidate in its own process, within limits, and always return.

Each run gets a private folder (its working, temporary and scratch build directory), a
scrubbed environment (an allowlist, and nothing that looks like a key or token), its own
session (so the whole process group can be killed), RLIMIT_AS and RLIMIT_CPU (set by the
worker before any candidate code runs), a wall-clock limit that restarts when compilation
ends, and a fresh network namespace via `unshare -rn` where the platform allows it.
A hang, a crash, an abort or a memory bomb comes back as a WorkerRun with its reason.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from npu_pool.protocol import WorkerRequest, WorkerResult

log = structlog.get_logger("npu_pool.sandbox")

ENV_ALLOW = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
             "XDG_CACHE_HOME", "CUDA_HOME", "CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES",
             "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH", re.IGNORECASE)
_REPO_ROOT = Path(__file__).resolve().parents[1]
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


@functools.cache
def network_namespace_available() -> bool:
    """Whether `unshare -rn` (an unprivileged user + network namespace) works here."""
    if shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def scrubbed_env(extra_allow: tuple[str, ...], work_dir: Path, cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ENV_ALLOW + extra_allow and not _SECRET_NAME.search(k)}
    env.update(
        TMPDIR=str(work_dir / "tmp"),
        PYTHONPATH=str(_REPO_ROOT),
        PYTHONDONTWRITEBYTECODE="1",
        TORCH_EXTENSIONS_DIR=str(cache_dir / "torch_extensions"),
        TORCHINDUCTOR_CACHE_DIR=str(cache_dir / "inductor"),
        MALLOC_ARENA_MAX="2",  # glibc reserves 64 MiB of address space per arena otherwise
    )
    return env


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


def run_worker(request: WorkerRequest, compile_timeout_s: float, run_timeout_s: float,
               extra_env: tuple[str, ...] = (), network_isolation: bool = True,
               keep_dir: bool = False) -> WorkerRun:
    """Run `python -m npu_pool.worker` on `request`; never raises for what the candidate does."""
    work_dir = Path(tempfile.mkdtemp(prefix="evokernel-sandbox-"))
    (work_dir / "tmp").mkdir()
    request_path, result_path, stage_path = work_dir / "request.json", work_dir / "result.json", work_dir / "stage.txt"
    request_path.write_text(request.model_dump_json())
    nonce = secrets.token_hex(16)
    isolate = network_isolation and network_namespace_available()
    cmd = [sys.executable, "-m", "npu_pool.worker", str(request_path), str(result_path), str(stage_path)]
    if isolate:
        cmd = ["unshare", "-rn", *cmd]
    env = scrubbed_env(extra_env, work_dir, Path(request.cache_dir))
    started = time.monotonic()
    stderr_path = work_dir / "stderr.log"
    with (work_dir / "stdout.log").open("wb") as out, stderr_path.open("wb") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=out, stderr=err, cwd=work_dir, env=env,
                                start_new_session=True, close_fds=True)
        try:
            proc.stdin.write((nonce + "\n").encode())
            proc.stdin.close()
        except OSError:
            pass
        stage, deadline, timed_out = "startup", started + compile_timeout_s + run_timeout_s, False
        while proc.poll() is None:
            current = _read_stage(stage_path, stage)
            if current != stage:
                if stage in ("startup", "compile") and current not in ("startup", "compile"):
                    deadline = time.monotonic() + run_timeout_s  # compilation is over: the run clock starts
                stage = current
            if time.monotonic() > deadline:
                timed_out = True
                break
            time.sleep(_POLL_S)
        _kill_group(proc)
    stage = _read_stage(stage_path, stage)
    result = _read_result(result_path, nonce)
    run = WorkerRun(result=result, returncode=proc.returncode, timed_out=timed_out, stage=stage,
                    stderr_tail=_tail(stderr_path), wall_s=time.monotonic() - started,
                    sandbox={"process": "subprocess, own session", "memory_limit_mb": request.limits.memory_mb,
                             "cpu_time_limit_s": request.limits.cpu_s,
                             "wall_limit_s": {"compile": compile_timeout_s, "run": run_timeout_s},
                             "env": "allowlist", "network_namespace": isolate,
                             "network_isolated": result.network_isolated if result else None})
    if keep_dir:
        run.sandbox["work_dir"] = str(work_dir)
    else:
        shutil.rmtree(work_dir, ignore_errors=True)
    return run


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the worker's whole process group (and reap the worker)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        log.warning("worker did not die after SIGKILL", pid=proc.pid)


def _read_result(path: Path, nonce: str) -> WorkerResult | None:
    try:
        result = WorkerResult.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None
    if not secrets.compare_digest(result.nonce, nonce):
        log.warning("ignoring a worker result without the right nonce (forged by the candidate?)")
        return None
    return result


def describe_exit(returncode: int | None) -> tuple[str, str]:
    """(category, words) for how a worker without a result ended."""
    if returncode is None:
        return "unknown", "did not exit"
    if returncode < 0:
        sig = -returncode
        names = {signal.SIGSEGV: ("crash", "crashed with a segmentation fault (SIGSEGV)"),
                 signal.SIGBUS: ("crash", "crashed with a bus error (SIGBUS)"),
                 signal.SIGABRT: ("abort", "aborted (SIGABRT)"),
                 signal.SIGFPE: ("crash", "crashed with an arithmetic exception (SIGFPE)"),
                 signal.SIGILL: ("crash", "crashed on an illegal instruction (SIGILL)"),
                 signal.SIGXCPU: ("cpu_time_limit", "exceeded its CPU-time limit (SIGXCPU)"),
                 signal.SIGALRM: ("timeout", "exceeded its per-call time limit (SIGALRM: harness.call_time_limit_"
                                  "factor times the reference's time, at least call_time_limit_min_s)"),
                 signal.SIGXFSZ: ("file_size_limit", "wrote a file beyond the 2 GiB limit (SIGXFSZ)"),
                 signal.SIGKILL: ("killed", "was killed (SIGKILL: out of memory or the CPU-time hard limit)")}
        return names.get(sig, ("crash", f"was killed by signal {sig}"))
    return "exit", f"exited with code {returncode} without a result"
