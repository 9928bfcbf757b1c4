"""Task files loaded in a child with time and memory bounds (issue 45.7).

Loading a task runs its file's top-level code, `get_inputs`, `get_init_inputs` and `Model(...)`
a dozen times (fitting its sizes, choosing its second sizes). Users bring task files from
elsewhere, so `load_task_for` (the campaign, `verify`, `profile`, `tasks check`, the benchmarks) does it in a
child process, `python -m npu_pool.sandbox.task_loader`, started once per process and kept for the
next task: torch is imported once. The child runs with RLIMIT_DATA at `task_load_memory_mb`
on top of what it holds after importing torch, may write no file (Landlock, where the kernel
has it), has no network (a network namespace of its own, `unshare -rn`, where the platform
allows, as the candidates' warm server; issue 55), and gets no secret environment variables.
Its whole process tree is bounded as a candidate's is (tree_limits: a cgroup of its own with
`process_limit` tasks and, once torch is imported, what it then holds plus
`task_load_memory_mb`; a task that forks at import fails in one line and what it started is
killed after each task). The parent waits `task_load_timeout_s` for each task and kills the
child past it. Every way it fails is one TaskLoadError line: a loop at import is a timeout, a
huge allocation a memory message. `tasks check` runs each task's reference in the same child
(`load_and_time_reference`): a task file never runs unconfined. (Tests call `load_task`
in-process: their tasks are ours.)
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npu_pool.paths import child_pythonpath
from npu_pool.sandbox.child_env import SECRET_NAME

if TYPE_CHECKING:
    from npu_pool.tasks.spec import TaskSpec

STARTUP_TIMEOUT_S = 300  # importing torch, on a loaded machine
_STARTUP_MB = 4096  # the tree's memory bound while torch imports (then: what it holds + task_load_memory_mb)
_MEMORY_WORDS = ("MemoryError", "can't allocate memory", "Cannot allocate memory", "std::bad_alloc")


class _Loader:
    """One child that loads tasks on request, one JSON line each way."""

    def __init__(self, memory_mb: int, process_limit: int):
        from npu_pool.sandbox import tree_limits
        from npu_pool.sandbox.confinement import network_namespace_available

        self.memory_mb = memory_mb
        env = {k: v for k, v in os.environ.items() if not SECRET_NAME.search(k)}
        env["PYTHONPATH"] = child_pythonpath(env.get("PYTHONPATH"))  # this harness, from cwd "/" too
        self.isolated = network_namespace_available()
        command = [sys.executable, "-m", "npu_pool.sandbox.task_loader", str(memory_mb)]
        self.proc = subprocess.Popen((["unshare", "-rn"] if self.isolated else []) + command,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, cwd="/", start_new_session=True, text=True)
        # the child runs no task code before it is ready: joined here, every process a task starts is in the group
        self.group = tree_limits.create(memory_mb + _STARTUP_MB, process_limit)
        for procs in self.group.join_files() if self.group else []:
            try:
                Path(procs).write_text(str(self.proc.pid))
            except OSError:
                self.group.remove()
                self.group = None
                break
        # torch's import is not the task's time: the per-task clock starts once the child is ready
        answered = select.select([self.proc.stdout], [], [], STARTUP_TIMEOUT_S)[0]
        if not (answered and self.proc.stdout.readline()):
            why = self._startup_failure(bool(answered))
            self.stop()
            raise RuntimeError(why)
        self._tighten_memory()

    def _startup_failure(self, ended: bool) -> str:
        """Why the child never said it was ready: the clock ran out, or it ended (how; an out-of-memory
        kill of its group is named: importing torch did not fit where it runs)."""
        if not ended:
            return f"the task loader did not start within {STARTUP_TIMEOUT_S} s"
        from npu_pool.sandbox.exit_status import describe_exit

        self.proc.wait()
        if self.group is not None and self.group.oom_kills() > 0:
            return ("the task loader was killed for memory before it was ready (importing torch did not fit: "
                    "the machine's own memory limit, or harness.task_load_memory_mb)")
        return f"the task loader {describe_exit(self.proc.returncode)[1]} before it was ready"

    def _tighten_memory(self) -> None:
        """The group's memory bound: what the child holds with torch imported, plus memory_mb."""
        if self.group is None or self.group.memory is None:
            return
        for usage_file, limits in (("memory.current", ("memory.max",)),
                                   ("memory.usage_in_bytes", ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"))):
            try:
                usage = int((self.group.memory / usage_file).read_text())
            except (OSError, ValueError):
                continue
            for name in limits:  # v1: the memory limit before memsw, which may not be below it
                try:
                    (self.group.memory / name).write_text(str(usage + self.memory_mb * 2**20))
                except OSError:
                    pass

    def after_task(self) -> str | None:
        """After each answer: kill what the task left running (its processes, not the child), and
        say so when it passed the process bound."""
        if self.group is None:
            return None
        hit = self.group.process_limit_hit()
        for folder in self.group.folders:
            try:
                pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
            except (OSError, ValueError):
                continue
            for pid in pids:
                if pid != self.proc.pid:
                    try:
                        os.kill(pid, 9)
                    except (ProcessLookupError, PermissionError):
                        pass
        if hit:
            limit = self.group.process_limit
            self.stop()
            return _process_line(limit)
        return None

    def ask(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any] | str:
        """The child's answer; or, when it did not answer in time or died (then it is gone), why."""
        ready = False
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            ready = bool(select.select([self.proc.stdout], [], [], timeout_s)[0])
            line = self.proc.stdout.readline() if ready else ""
        except (OSError, ValueError):
            line = ""
        if line:
            return json.loads(line)
        alive = self.proc.poll() is None
        # read before the group goes: a tree past a bound is told as such, whatever ended it
        too_many = self.group is not None and self.group.process_limit_hit()
        out_of_memory = self.group is not None and self.group.oom_kills() > 0
        self.stop()
        if too_many:
            return "process_limit"
        if not ready and alive:
            return "timeout"
        if out_of_memory:
            return "out_of_memory"
        from npu_pool.sandbox.exit_status import describe_exit

        return f"the process loading it {describe_exit(self.proc.returncode)[1]}"

    def stop(self) -> None:
        import signal

        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        if self.group is not None:
            self.group.remove()
            self.group = None


_loaders: dict[tuple[int, int], _Loader] = {}
_lock = threading.Lock()


@atexit.register
def _stop_loaders() -> None:
    for loader in _loaders.values():
        loader.stop()
    _loaders.clear()


def _ask_bounded(path: str | Path, timeout_s: float, memory_mb: int, process_limit: int,
                 request: dict[str, Any]) -> dict[str, Any]:
    """The loader child's answer to one request about `path`; TaskLoadError with one clear line."""
    from npu_pool.tasks.spec import TaskLoadError

    path = Path(path)
    if not path.is_file():
        raise TaskLoadError(f"cannot read task {path}: no such file")
    key = (memory_mb, process_limit)
    with _lock:
        loader = _loaders.get(key)
        if loader is None or loader.proc.poll() is not None:
            try:
                loader = _loaders[key] = _Loader(memory_mb, process_limit)
            except (OSError, RuntimeError) as exc:
                raise TaskLoadError(f"{path.name}: {exc}") from exc
        answer = loader.ask({"path": str(path.resolve()), **request}, timeout_s)
        if isinstance(answer, str):
            del _loaders[key]
            if answer == "timeout":
                raise TaskLoadError(f"{path.name}: loading the task did not finish within {timeout_s:g} s (its "
                                    "module-level code, get_inputs, get_init_inputs or Model(...) ran that long): "
                                    "a task must load in seconds (harness.task_load_timeout_s)")
            if answer == "out_of_memory":
                raise TaskLoadError(_memory_line(path, memory_mb))
            if answer == "process_limit":
                raise TaskLoadError(f"{path.name}: {_process_line(process_limit)}")
            raise TaskLoadError(f"{path.name}: {answer} while loading the task")
        if (too_many := loader.after_task()) is not None:
            del _loaders[key]
            raise TaskLoadError(f"{path.name}: {too_many}")
    if "error" in answer:
        raise TaskLoadError(answer["error"])
    return answer


def load_bounded(path: str | Path, *, timeout_s: float, memory_mb: int, process_limit: int = 1024,
                 **options: Any) -> Any:
    """load_task(path, **options) in the loader child; raises TaskLoadError with one clear line."""
    from npu_pool.tasks.spec import TaskSpec

    return TaskSpec.model_validate(_ask_bounded(path, timeout_s, memory_mb, process_limit, options)["task"])


def _options(config: Any) -> dict[str, Any]:
    return dict(sizes=config.sizes, max_bytes=config.fit_max_bytes, max_gflop=config.fit_max_gflop,
                min_dim=config.fit_min_dim)


def load_task_for(path: str | Path, config: Any) -> TaskSpec:
    """load_task with the sizes mode and budget of a HarnessConfig, in a child process with
    the config's time, memory and process bounds: a task file is not ours."""
    return load_bounded(path, timeout_s=config.task_load_timeout_s, memory_mb=config.task_load_memory_mb,
                        process_limit=config.process_limit, **_options(config))


def load_and_time_reference(path: str | Path, config: Any) -> tuple[TaskSpec, float]:
    """load_task_for, then one call of the task's reference at those sizes (seconds), both in the
    bounded child (`evokernel tasks check`): the reference runs the task file's code too."""
    from npu_pool.tasks.spec import TaskSpec

    answer = _ask_bounded(path, config.task_load_timeout_s, config.task_load_memory_mb, config.process_limit,
                          {**_options(config), "reference": True})
    return TaskSpec.model_validate(answer["task"]), answer["reference_s"]


def _answer(request: dict[str, Any], memory_mb: int) -> dict[str, Any]:
    from npu_pool.tasks.spec import TaskLoadError, load_task, run_reference

    path = request.pop("path")
    reference = request.pop("reference", False)
    try:
        spec = load_task(path, **request)
        if reference and (available := _available_bytes()) is not None and spec.tensor_bytes > available // 2:
            raise TaskLoadError(f"{Path(path).name}: these sizes need {spec.tensor_bytes / 2**30:.1f} GiB of tensors; "
                                f"{available / 2**30:.1f} GiB of memory is available (use --sizes fit)")
        return {"task": spec.model_dump(mode="json"), **({"reference_s": run_reference(spec)} if reference else {})}
    except (TaskLoadError, Exception) as exc:  # noqa: BLE001 - every failure is one line for the user
        text = f"{type(exc).__name__}: {exc}" if not isinstance(exc, TaskLoadError) else str(exc)
        if isinstance(exc, MemoryError) or any(word in text for word in _MEMORY_WORDS):
            return {"error": _memory_line(path, memory_mb)}
        return {"error": text.splitlines()[0][:500] if text else f"{Path(path).name}: the task did not load"}


def _available_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _process_line(process_limit: int) -> str:
    return (f"the task started more processes than allowed while loading ({process_limit} tasks, threads "
            "included, all its processes together; harness.process_limit): a task file must not start processes")


def _memory_line(path: str | Path, memory_mb: int) -> str:
    return (f"{Path(path).name}: loading the task ran out of memory (its module-level code, get_inputs, "
            f"get_init_inputs or Model(...) wanted more than the {memory_mb} MiB allowed, harness.task_load_memory_mb)")


def main(memory_mb: int) -> None:
    """The child: limits first, then one task per line on stdin, one JSON answer per line."""
    parent = os.getppid()  # before torch's import: a parent killed during it is noticed too
    import resource

    import torch  # noqa: F401 - imported before the limit, so the limit is what tasks may add
    import torch._dynamo  # noqa: F401 - FlopCounterMode imports it on first use, and it writes its caches as it does
    import torch.utils.flop_counter  # noqa: F401

    from npu_pool.sandbox import confinement
    from npu_pool.sandbox.worker import _vm_data_bytes

    def watch_parent() -> None:  # a task looping at import must not outlive a parent killed outright
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch_parent, daemon=True).start()
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what a task prints goes nowhere, never into the answers
    limit = _vm_data_bytes() + memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if confinement.landlock_abi() >= 1:  # a task file writes nothing (and leaves nothing behind)
        confinement.restrict_writes([])
    answers.write('{"ready": true}\n')
    answers.flush()
    for line in sys.stdin:
        answers.write(json.dumps(_answer(json.loads(line), memory_mb)) + "\n")
        answers.flush()


if __name__ == "__main__":
    main(int(sys.argv[1]))
