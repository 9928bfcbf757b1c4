"""The sandboxed worker: what runs in the child the warm server forks for one candidate.

Runs with limits set before any candidate code: loads the task, builds
the candidate (the compile gate), runs the correctness gate and, if asked, the profiler.
Results go to RESULT as JSON carrying the nonce the parent sent, so a file a candidate
forges without it is ignored; STAGE always names the step in progress so the
parent can say where a hang or a crash happened.
"""

from __future__ import annotations

import os
import resource
import socket
import sys
import time
from pathlib import Path
from typing import Any

from npu_pool.sandbox.failure_text import device_problem, first_compiler_errors, infra_category


def _set_limits(memory_mb: int, cpu_s: int, processes: int) -> None:
    # RLIMIT_DATA, not RLIMIT_AS: it counts what is written to (heap, anonymous maps), not
    # address space merely reserved, which CUDA and CANN reserve by the terabyte. The
    # budget comes on top of what the warm server already holds (torch, imported).
    held = _vm_data_bytes()
    resource.setrlimit(resource.RLIMIT_DATA, (held + memory_mb * 2**20, held + memory_mb * 2**20))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # A fork bomb stalls at this many tasks of our user (threads count); the PID namespace
    # then kills them all. (Not enforced for the real root: npu_pool.sandbox.tree_limits bounds the
    # whole tree there, with a cgroup or a watchdog.)
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    # No single file beyond 2 GiB (an endless print loop into the log files), while a
    # precompiled torch header (about 0.8 GiB) still fits.
    resource.setrlimit(resource.RLIMIT_FSIZE, (2 * 2**30, 2 * 2**30))


def _vm_data_bytes() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _network_isolated() -> bool:
    """True when only the loopback interface exists (a fresh network namespace)."""
    try:
        return all(name == "lo" for _, name in socket.if_nameindex())
    except OSError:
        return False


class Worker:
    def __init__(self, request_path: str, result_path: str, stage_path: str, nonce: str,
                 seal: Any = lambda: None, confinement: dict[str, Any] | None = None):
        from npu_pool.protocol import WorkerRequest

        self.request = WorkerRequest.model_validate_json(Path(request_path).read_text())
        self.result_path = Path(result_path)
        self.stage_path = Path(stage_path)
        self.nonce = nonce
        self.timings: dict[str, float] = {}
        self.builds: list[dict[str, Any]] = []
        self.seal = seal  # after the build: only the sandbox folder stays writable
        self.confinement = confinement or {}
        self._last: tuple[Any, ...] | None = None
        self._task: Any = None  # the task's module, once loaded
        self.current_stage = "startup"  # ours, not the STAGE file a candidate could overwrite

    def stage(self, name: str) -> None:
        self.current_stage = name
        tmp = self.stage_path.with_suffix(".tmp")
        tmp.write_text(name)
        os.replace(tmp, self.stage_path)

    def emit(self, outcome: Any, profile: Any = None, profile_error: str | None = None, complete: bool = False) -> None:
        from npu_pool import harness_cache
        from npu_pool.protocol import WorkerResult

        self._last = (outcome, profile, profile_error, complete)
        result = WorkerResult(nonce=self.nonce, outcome=outcome, profile=profile, profile_error=profile_error,
                              timings=self.timings, builds=self.builds, network_isolated=_network_isolated(),
                              complete=complete, cache_updates=harness_cache.pending(),
                              confinement=self.confinement)
        tmp = self.result_path.with_suffix(".tmp")
        tmp.write_text(result.model_dump_json())
        os.replace(tmp, self.result_path)

    def reemit(self) -> None:
        """Write the last result again (new cache entries since): the process may die next."""
        if self._last is not None:
            self.emit(*self._last)

    def run(self) -> None:

        req = self.request
        self.stage("startup")
        import torch

        from npu_pool import build_cache
        from npu_pool.backends import get_backend
        from npu_pool.gates import correctness
        from npu_pool.tasks.sizing import exec_task

        backend = get_backend(req.backend)
        self.stage("device")
        problem = device_problem(backend, req.candidate.format, torch)
        if problem is not None:
            self.emit(_infra(*problem), complete=True)
            return
        self.stage("startup")
        cache_dir = Path(req.cache_dir)
        task = exec_task(req.task.source, req.task.path)
        init_inputs = list(task.get_init_inputs())
        if req.profile:
            from npu_pool.gates.roofline import device_peaks

            device_peaks(backend)  # measured (once per machine) before any candidate code is loaded

        self.stage("compile")
        t0 = time.perf_counter()
        self._task = task
        try:
            candidate_at = self._build(req, backend, cache_dir, build_cache, torch)
            make_candidate = candidate_at(req.task.kernel_signature, init_inputs)
        except _GateFailure as failure:
            self.timings["compile_s"] = time.perf_counter() - t0
            self.emit(failure.outcome, complete=True)
            return
        self.timings["compile_s"] = time.perf_counter() - t0
        if self.builds:
            self.timings["compile_cached"] = float(all(b.get("cached", False) for b in self.builds))

        self.stage("correctness")
        t0, c0 = time.perf_counter(), time.process_time()  # CPU seconds too: wall time follows the machine's load
        cfg = req.config
        outcome = correctness.check(task, make_candidate, backend.device, cfg.correctness_trials, cfg.seed,
                                    cfg.atol, cfg.rtol, cfg.perturbed_trial,
                                    on_trial=lambda label: self.stage(f"correctness: {label}"),
                                    clock=correctness.CallClock(cfg.call_time_limit_factor, cfg.call_time_limit_min_s))
        if outcome.feasible:  # and again at the task's second, awkward sizes
            from npu_pool.gates.second_size_check import check_second_size

            outcome = check_second_size(outcome, req, candidate_at, backend.device, self.stage, self.timings)
        self.timings["correctness_s"] = time.perf_counter() - t0
        self.timings["correctness_cpu_s"] = time.process_time() - c0
        if not outcome.feasible or not req.profile:
            self.emit(outcome, complete=True)
            return
        self.emit(outcome)  # kept if profiling dies

        from npu_pool.gates.profiler import measure
        from npu_pool.gates.timed_check import ChangedUnderTiming

        if req.timing_slot:
            self._wait_for_timing_slot()
        from npu_pool.sandbox.heap_poison import poison_heap

        poison_heap(False)  # filling each allocation would be timed too, in the candidate and the reference
        self.stage("profile")
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            report = measure(task, req.task, make_candidate, backend, cfg, cache_dir, on_stage=self.stage,
                             on_partial=lambda partial: self.emit(outcome, profile=partial))
        except ChangedUnderTiming as changed:  # outputs of timed calls (or a re-verify) did not match
            self.timings["profile_s"] = time.perf_counter() - t0
            self.emit(changed.outcome, complete=True)
            return
        except Exception as exc:
            self.timings["profile_s"] = time.perf_counter() - t0
            self.emit(outcome, profile_error=f"{type(exc).__name__}: {exc}"[:500], complete=True)
            return
        self.timings["profile_s"] = time.perf_counter() - t0
        self.timings["profile_cpu_s"] = time.process_time() - c0
        from npu_pool.backends.events import EventBackend

        if isinstance(backend, EventBackend):  # device events see one stream: was work left running?
            from npu_pool.gates.timed_check import untimed_work

            self.stage("profile: stream audit")
            untimed = untimed_work(task, make_candidate, backend, cfg)
            if untimed is not None:
                self.emit(untimed, complete=True)
                return
        self.emit(outcome, profile=report, complete=True)

    def _wait_for_timing_slot(self) -> None:
        """The parent holds the node while we time (CPU slots share cores): it writes `go`
        once it has. Wall time spent here is not counted against the candidate."""
        self.stage("waiting for the node")
        go = Path.cwd() / "go"
        while not go.exists():
            time.sleep(0.005)

    def _seal(self, req: Any, backend: Any, cache_dir: Path) -> None:
        """The build is over: what still needs a compiler (the torch.compile baseline) is built
        now, then the sandbox is sealed (no writes outside its folder, no programs executed)."""
        if req.profile:
            from npu_pool.gates import profiler

            if profiler.compile_baseline_wanted(backend, req.task, req.config, cache_dir):
                profiler.prepare_compile_baseline(self._task, req.task, backend, req.config)
        self.seal()

    def _build(self, req: Any, backend: Any, cache_dir: Path, build_cache: Any, torch: Any) -> Any:
        """The compile gate; returns `candidate_at(signature, init_inputs)`, the candidate's
        maker for the task at one set of sizes (the kernel format's entry point at those sizes,
        the constructor's arguments at them)."""
        from npu_pool.backends.base import KernelBuildError, ToolchainMissing
        from npu_pool.protocol import WorkerOutcome

        if req.candidate.format == "kernel":
            signature = req.task.kernel_signature
            if signature is None:
                raise _GateFailure(WorkerOutcome(feasible=False, gate="compile", category="no_signature",
                                                 reason="this task has no kernel-source signature",
                                                 details=req.task.signature_error or ""))
            cached = False
            try:
                known = set((cache_dir / "kernels").glob("kernel-*.so"))
                artifact = backend.compile_kernel(req.candidate.source, signature, Path.cwd(), cache_dir / "kernels")
                cached = artifact in known
                self._seal(req, backend, cache_dir)  # loading runs the library's constructors: candidate code from here on
                backend.wrap_kernel(artifact, signature, torch.nn.Module())  # loads and resolves the symbol
            except ToolchainMissing as exc:
                raise _GateFailure(_infra("toolchain_missing", str(exc))) from exc
            except KernelBuildError as exc:
                raise _GateFailure(WorkerOutcome(feasible=False, gate="compile", category="compile_error",
                                                 reason=str(exc), details=first_compiler_errors(exc.log) if exc.log else str(exc))) from exc
            self.builds.append({"artifact": artifact.name, "cached": cached})
            return lambda at, _init: lambda reference, seed: backend.wrap_kernel(artifact, at, reference)

        build_cache.install(cache_dir / "torch_extensions", backend.load_inline_defaults() | {"use_pch": req.config.use_pch},
                            self.builds, backend.toolchain_identity())
        path = Path.cwd() / "candidate.py"
        path.write_text(req.candidate.source)
        try:
            module = _exec_candidate(req.candidate.source, str(path))
        except SyntaxError as exc:
            raise _GateFailure(WorkerOutcome(feasible=False, gate="compile", category="syntax_error",
                                             reason=f"syntax error at line {exc.lineno}: {exc.msg}",
                                             details=f"{exc.text or ''}".rstrip())) from exc
        except Exception as exc:
            text = str(exc)
            missing = backend.toolchain_problem("modelnew")  # the harness's own check, not the candidate's words
            if missing is not None and infra_category(f"{type(exc).__name__}: {text}") is not None:
                raise _GateFailure(_infra("toolchain_missing", f"{missing} ({type(exc).__name__}: {text.splitlines()[0] if text else ''})"[:300],
                                          _tail_traceback(exc))) from exc
            if "Error building extension" in text or "error:" in text:
                raise _GateFailure(WorkerOutcome(feasible=False, gate="compile", category="compile_error",
                                                 reason="the C++ extension did not compile",
                                                 details=first_compiler_errors(text))) from exc
            raise _GateFailure(WorkerOutcome(feasible=False, gate="compile", category="import_error",
                                             reason=f"{type(exc).__name__} while loading the candidate: {text.splitlines()[0] if text else ''}"[:300],
                                             details=_tail_traceback(exc))) from exc
        self._seal(req, backend, cache_dir)  # its extensions are built (load_inline runs at import): no more cache writes
        model_class = getattr(module, "ModelNew", None)
        if not isinstance(model_class, type) or not issubclass(model_class, torch.nn.Module):
            raise _GateFailure(WorkerOutcome(feasible=False, gate="compile", category="missing_modelnew",
                                             reason="the candidate defines no ModelNew(nn.Module) class"))
        device = backend.device

        def candidate_at(_signature: Any, init_inputs: list[Any]) -> Any:
            def make(reference: Any, seed: int) -> Any:
                torch.manual_seed(seed)
                model = model_class(*init_inputs)
                ref_state, own = reference.state_dict(), model.state_dict()
                shared = {k: v for k, v in ref_state.items() if k in own and own[k].shape == v.shape and own[k].dtype == v.dtype}
                model.load_state_dict(shared, strict=False)
                return model.to(device).eval()

            return make

        return candidate_at


def _infra(category: str, reason: str, details: str = "") -> Any:
    from npu_pool.protocol import WorkerOutcome

    return WorkerOutcome(feasible=False, gate="infra", category=category, reason=reason[:300],
                         details=details or "an infrastructure failure, not the candidate's: fix the machine and run it again")


class _GateFailure(Exception):
    def __init__(self, outcome: Any):
        super().__init__(outcome.reason)
        self.outcome = outcome


def _tail_traceback(exc: BaseException) -> str:
    import traceback

    return "".join(traceback.format_exception(exc)[-6:])[-2000:]


def _exec_candidate(source: str, filename: str) -> Any:
    import types

    module = types.ModuleType("evokernel_candidate")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    exec(compile(source, filename, "exec"), module.__dict__)
    return module


def run_child(request_path: str, result_path: str, stage_path: str, nonce: str, memory_mb: int, cpu_s: int,
              processes: int, seal: Any, confinement: dict[str, Any]) -> None:
    """The runner's whole life, in a child forked from the warm server (npu_pool.sandbox.warm_worker)."""
    from npu_pool import harness_cache

    started = time.perf_counter()
    worker = Worker(request_path, result_path, stage_path, nonce, seal, confinement)
    harness_cache.defer_writes(on_record=worker.reemit)  # the parent writes the caches
    _set_limits(memory_mb, cpu_s, processes)
    worker.timings["process_start_s"] = time.perf_counter() - started
    try:
        worker.run()
    except SystemExit as exc:
        _report_crash(worker, f"the candidate called exit({exc.code})")
    except BaseException as exc:  # anything else the candidate raised outside the gates
        from npu_pool.gates.correctness import HarnessDeviceError

        text = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, HarnessDeviceError) or worker.current_stage in ("startup", "device"):
            # no candidate code has run yet, or the harness itself failed: never the candidate's verdict
            category = "harness_error" if isinstance(exc, HarnessDeviceError) else infra_category(text) or "harness_error"
            worker.emit(_infra(category, f"{text.splitlines()[0]} during {worker.current_stage}", _tail_traceback(exc)),
                        complete=True)
        else:
            kind = "out_of_memory" if isinstance(exc, MemoryError) else "exception"
            _report_crash(worker, text[:300], kind, _tail_traceback(exc))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: a candidate's atexit hooks and threads get no say


def _report_crash(worker: Worker, reason: str, category: str = "exit", details: str = "") -> None:
    from npu_pool.protocol import WorkerOutcome

    stage = worker.current_stage
    gate = "compile" if stage == "compile" else "runtime"
    worker.emit(WorkerOutcome(feasible=False, gate=gate, category=category, reason=f"{reason} during {stage}",
                              details=details), complete=True)


