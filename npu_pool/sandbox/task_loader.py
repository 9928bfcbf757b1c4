"""Task files loaded in a child with time and memory bounds (issue 45.7).

Loading a task runs its file's top-level code, `get_inputs`, `get_init_inputs` and `Model(...)`
a dozen times (fitting its sizes, choosing its second sizes). Users bring task files from
elsewhere, so `load_task_for` (the campaign, `verify`, `profile`, `tasks check`, the benchmarks) does it in a
child process, `python -m npu_pool.sandbox.task_loader`, started once per process and kept for the
next task: torch is imported once. The child runs with RLIMIT_DATA at `task_load_memory_mb`
on top of what it holds after importing torch, may write no file (Landlock, where the kernel
has it), and gets no secret environment variables; the parent
waits `task_load_timeout_s` for each task and kills the child past it. Every way it fails is
one TaskLoadError line: a loop at import is a timeout, a huge allocation a memory message.
(Tests call `load_task` in-process: their tasks are ours.)
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from npu_pool.tasks.spec import TaskSpec

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH", re.IGNORECASE)
STARTUP_TIMEOUT_S = 300  # importing torch, on a loaded machine
_MEMORY_WORDS = ("MemoryError", "can't allocate memory", "Cannot allocate memory", "std::bad_alloc")


class _Loader:
    """One child that loads tasks on request, one JSON line each way."""

    def __init__(self, memory_mb: int):
        self.memory_mb = memory_mb
        env = {k: v for k, v in os.environ.items() if not _SECRET_NAME.search(k)}
        self.proc = subprocess.Popen([sys.executable, "-m", "npu_pool.sandbox.task_loader", str(memory_mb)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, cwd="/", start_new_session=True, text=True)
        # torch's import is not the task's time: the per-task clock starts once the child is ready
        ready = select.select([self.proc.stdout], [], [], STARTUP_TIMEOUT_S)[0] and self.proc.stdout.readline()
        if not ready:
            self.stop()
            raise RuntimeError(f"the task loader did not start within {STARTUP_TIMEOUT_S} s")

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
        self.stop()
        if not ready and alive:
            return "timeout"
        from npu_pool.sandbox.exit_status import describe_exit

        return f"the process loading it {describe_exit(self.proc.returncode)[1]}"

    def stop(self) -> None:
        import signal

        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()


_loaders: dict[int, _Loader] = {}
_lock = threading.Lock()


@atexit.register
def _stop_loaders() -> None:
    for loader in _loaders.values():
        loader.stop()
    _loaders.clear()


def load_bounded(path: str | Path, *, timeout_s: float, memory_mb: int, **options: Any) -> Any:
    """load_task(path, **options) in the loader child; raises TaskLoadError with one clear line."""
    from npu_pool.tasks.spec import TaskLoadError, TaskSpec

    path = Path(path)
    if not path.is_file():
        raise TaskLoadError(f"cannot read task {path}: no such file")
    with _lock:
        loader = _loaders.get(memory_mb)
        if loader is None or loader.proc.poll() is not None:
            try:
                loader = _loaders[memory_mb] = _Loader(memory_mb)
            except (OSError, RuntimeError) as exc:
                raise TaskLoadError(f"{path.name}: {exc}") from exc
        answer = loader.ask({"path": str(path.resolve()), **options}, timeout_s)
        if isinstance(answer, str):
            del _loaders[memory_mb]
            if answer == "timeout":
                raise TaskLoadError(f"{path.name}: loading the task did not finish within {timeout_s:g} s (its "
                                    "module-level code, get_inputs, get_init_inputs or Model(...) ran that long): "
                                    "a task must load in seconds (harness.task_load_timeout_s)")
            raise TaskLoadError(f"{path.name}: {answer} while loading the task")
    if "error" in answer:
        raise TaskLoadError(answer["error"])
    return TaskSpec.model_validate(answer["task"])


def load_task_for(path: str | Path, config: Any) -> TaskSpec:
    """load_task with the sizes mode and budget of a HarnessConfig, in a child process with
    the config's time and memory bounds: a task file is not ours."""
    return load_bounded(path, timeout_s=config.task_load_timeout_s, memory_mb=config.task_load_memory_mb,
                        sizes=config.sizes, max_bytes=config.fit_max_bytes, max_gflop=config.fit_max_gflop,
                        min_dim=config.fit_min_dim)


def _answer(request: dict[str, Any], memory_mb: int) -> dict[str, Any]:
    from npu_pool.tasks.spec import TaskLoadError, load_task

    path = request.pop("path")
    try:
        return {"task": load_task(path, **request).model_dump(mode="json")}
    except (TaskLoadError, Exception) as exc:  # noqa: BLE001 - every failure is one line for the user
        text = f"{type(exc).__name__}: {exc}" if not isinstance(exc, TaskLoadError) else str(exc)
        if isinstance(exc, MemoryError) or any(word in text for word in _MEMORY_WORDS):
            return {"error": f"{Path(path).name}: loading the task ran out of memory (its module-level code, "
                             f"get_inputs, get_init_inputs or Model(...) wanted more than the {memory_mb} MiB "
                             "allowed, harness.task_load_memory_mb)"}
        return {"error": text.splitlines()[0][:500] if text else f"{Path(path).name}: the task did not load"}


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
