"""The verifier: anti-hack gate here, then compile, correctness (and profiling) in the sandbox.

`verify(task, candidate, config) -> Verdict` and `evaluate(task, candidate, config,
profile=True) -> (Verdict, ProfileReport | None)`; the latter verifies and profiles in one
worker process, so torch is imported once. A backend that cannot run here (no device, no
toolchain for the format) gives a verdict with gate `infra` at once, before anything is
compiled; so does a device or harness failure inside the worker: never the candidate's.
Every verdict and report leaves here scrubbed (npu_pool.redaction): bounded, without known
secrets, and a compile verdict with the compiler's lines about the candidate's own source only.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

import structlog

from npu_pool.backends import Backend, get_backend
from npu_pool.config import HarnessConfig
from npu_pool.node_gate import NodeLock
from npu_pool.paths import build_cache_dir
from npu_pool.protocol import WorkerLimits, WorkerRequest
from npu_pool.sandbox.exit_status import describe_exit
from npu_pool.sandbox.leftovers import SANDBOX_PREFIX
from npu_pool.sandbox.runner import WorkerRun, run_worker
from npu_pool.tasks.spec import TaskSpec
from npu_pool.verdict import Candidate, ProfileReport, Verdict

log = structlog.get_logger("npu_pool.verifier")


class HarnessInternalError(Exception):
    """The harness itself is broken (not the candidate): e.g. the anti-hack checker is missing."""


def anti_hack(candidate: Candidate, backend: Backend) -> tuple[list[Any], list[Any]]:
    """(rejections, warnings) from the static checker (npu_pool.antihack)."""
    try:
        from npu_pool import antihack
    except ImportError as exc:
        raise HarnessInternalError(f"the anti-hack checker npu_pool.antihack cannot be imported: {exc}") from exc
    try:
        if candidate.format == "modelnew":
            findings = antihack.check_python_candidate(candidate.source)
        else:
            findings = antihack.check_kernel_source(candidate.source, backend.kernel_language)
    except ImportError as exc:  # a part of the checker is missing: never pass a candidate unchecked
        raise HarnessInternalError(f"the anti-hack checker is incomplete: {exc}") from exc
    return [f for f in findings if f.severity == "reject"], [f for f in findings if f.severity != "reject"]


def _finding_line(f: Any) -> str:
    where = f" (line {f.line})" if getattr(f, "line", None) else ""
    return f"{f.rule}{where}: {f.message}"


def evaluate(task: TaskSpec, candidate: Candidate, config: HarnessConfig,
             profile: bool = True, node_lock: NodeLock | None = None) -> tuple[Verdict, ProfileReport | None]:
    """Verify `candidate` and, when feasible and asked, profile it, in one sandboxed worker."""
    started = time.perf_counter()
    backend = get_backend(config.backend)
    ready, why = backend.ready(candidate.format)
    if not ready:  # fail fast: nothing is compiled, and the candidate is not blamed
        return Verdict(feasible=False, gate="infra", category="backend_unavailable",
                       reason=f"the {backend.name} backend cannot run here: {why}"[:300], sizes=task.sizes,
                       timings={"total_s": time.perf_counter() - started}), None
    if candidate.format not in backend.compile_routes:
        return Verdict(feasible=False, gate="compile", category="unsupported_format",
                       reason=f"the {backend.name} backend cannot build the {candidate.format} format",
                       sizes=task.sizes), None
    rejections, warnings = anti_hack(candidate, backend)
    flags = [f"static:{f.rule}" for f in warnings]
    hack_s = time.perf_counter() - started
    if rejections:
        return Verdict(feasible=False, gate="hack", category=rejections[0].rule,
                       reason=_finding_line(rejections[0])[:300],
                       details="\n".join(_finding_line(f) for f in rejections + warnings),
                       sizes=task.sizes, flags=flags, timings={"hack_s": hack_s}).scrubbed(), None
    verdict, report = sandboxed_gates(task, candidate, config, backend, profile, flags, node_lock)
    verdict.timings.update(hack_s=hack_s, total_s=time.perf_counter() - started)
    if verdict.feasible and warnings:
        verdict.details = (verdict.details + "\nstatic warnings: " + "; ".join(_finding_line(f) for f in warnings)).strip()
        verdict = verdict.scrubbed()
    log.info("verdict", task=task.task_id, format=candidate.format, gate=verdict.gate, category=verdict.category,
             feasible=verdict.feasible, seconds=round(verdict.timings["total_s"], 2))
    return verdict, report


def sandboxed_gates(task: TaskSpec, candidate: Candidate, config: HarnessConfig, backend: Backend,
                    profile: bool, flags: list[str] | None = None,
                    node_lock: NodeLock | None = None) -> tuple[Verdict, ProfileReport | None]:
    """Compile, correctness (and profiling) in one sandboxed child; no anti-hack gate here.
    With `node_lock` (CPU slots sharing a node's cores) the child times with the node alone."""
    request = WorkerRequest(task=task, candidate=candidate, backend=backend.name, config=config, profile=profile,
                            cache_dir=str(build_cache_dir(config.build_cache_dir)),
                            limits=WorkerLimits(memory_mb=config.memory_limit_mb, cpu_s=config.cpu_time_limit_s,
                                               processes=config.process_limit))
    run = run_worker(request, config.compile_timeout_s, config.run_timeout_s, backend.sandbox_env_allow,
                     network_isolation=config.network_isolation == "auto", policy=config.confinement,
                     node_lock=node_lock, pid_namespace=backend.pid_namespace)
    verdict, report = _interpret(run, task, list(flags or []))
    verdict.timings["sandbox_wall_s"] = run.wall_s
    own = (str(build_cache_dir(config.build_cache_dir) / "torch_extensions") + os.sep,
           os.path.join(tempfile.gettempdir(), SANDBOX_PREFIX))
    return verdict.scrubbed(own), report.scrubbed() if report else None


def verify(task: TaskSpec, candidate: Candidate, config: HarnessConfig, node_lock: NodeLock | None = None) -> Verdict:
    """The gates only: anti-hack, compile, correctness."""
    return evaluate(task, candidate, config, profile=False, node_lock=node_lock)[0]


def _interpret(run: WorkerRun, task: TaskSpec, flags: list[str]) -> tuple[Verdict, ProfileReport | None]:
    result = run.result
    common = dict(sizes=task.sizes, sandbox=run.sandbox)
    if run.tree_limit == "host_out_of_memory":  # the machine's limit, below the candidate's: not a verdict
        from npu_pool.sandbox.host_memory import host_fault_line

        return Verdict(feasible=False, gate="infra", category="host_out_of_memory",
                       reason=host_fault_line(run.sandbox.get("memory_limit_mb", 0), run.stage),
                       details=_failure_details(run), flags=flags, **common), None
    if run.tree_limit is not None:  # the whole process tree passed a bound: that is the verdict
        words = {"process_limit": f"started more processes than its limit ({run.sandbox.get('process_limit')} tasks, "
                                  "threads included, all its processes together)",
                 "out_of_memory": f"exceeded its memory limit ({run.sandbox.get('memory_limit_mb')} MiB, all its "
                                  "processes together)"}[run.tree_limit]
        return Verdict(feasible=False, gate="compile" if run.stage in ("startup", "compile") else "runtime",
                       category=run.tree_limit, reason=f"the candidate {words} during {run.stage}",
                       details=_failure_details(run), flags=flags, **common), None
    if result is None or (not result.complete and not result.outcome.feasible):
        gate = "compile" if run.stage in ("startup", "compile") else "runtime"
        if run.timed_out:
            category, words = "timeout", "exceeded its wall-clock limit"
        else:
            category, words = describe_exit(run.returncode)
        return Verdict(feasible=False, gate=gate, category=category, reason=f"the candidate {words} during {run.stage}",
                       details=_failure_details(run), flags=flags, **common), None
    out = result.outcome
    timings = dict(result.timings)
    verdict = Verdict(feasible=out.feasible, gate=out.gate, category=out.category, reason=out.reason,
                      details=out.details, flags=flags + out.flags, timings=timings, **common)
    if not out.feasible or result.complete and result.profile is None and result.profile_error is None:
        return verdict, None
    if not result.complete and result.profile is not None:  # killed while torch.compile built its baseline
        verdict.flags += [f for f in result.profile.flags if f not in verdict.flags]
        return verdict, result.profile
    if not result.complete:  # feasible, then the process died while profiling
        category, words = ("timeout", "exceeded its wall-clock limit") if run.timed_out else describe_exit(run.returncode)
        return verdict.model_copy(update=dict(feasible=False, gate="runtime", category=category,
                                              reason=f"the candidate {words} during {run.stage}",
                                              details=_failure_details(run))), None
    if result.profile is None:
        return verdict.model_copy(update=dict(feasible=False, gate="runtime", category="profile_error",
                                              reason=f"profiling failed: {result.profile_error}"[:300])), None
    report = result.profile
    verdict.flags += [f for f in report.flags if f not in verdict.flags]
    return verdict, report


def _failure_details(run: WorkerRun) -> str:
    lines = [f"the sandboxed process ran {run.wall_s:.1f} s and was in stage '{run.stage}'"]
    if run.timed_out:
        limits = run.sandbox.get("wall_limit_s", {})
        lines.append(f"wall-clock limits: compile {limits.get('compile')} s, run {limits.get('run')} s "
                     "(an endless loop, a deadlock, or far too much work for these sizes)")
    tail = run.stderr_tail.strip()
    if tail:
        lines.append("stderr (last lines):\n" + "\n".join(tail.splitlines()[-15:]))
    return "\n".join(lines)
