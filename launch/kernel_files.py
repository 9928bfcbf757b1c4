"""RUN_DIR/kernels/: each operator's best and first feasible kernel, written as the run goes.

For every operator with a feasible kernel the folder holds `<task>/best.<ext>` (the candidate
source exactly as verified: `.cpp`/`.cu` for the kernel format, `.py` for a ModelNew file)
and, for kernel-format candidates of the cpu and cuda backends, `best_modelnew.py`, a
standalone KernelBench ModelNew that builds and calls the kernel (launch.kernel_dropin; an
Ascend C kernel needs CANN, and index.json says so). The first feasible kernel is the best
until a faster one comes: until then it is kept once, under the best's names, and index.json's
`first` entry names those files; from then on it has its own `first.<ext>` (and
`first_modelnew.py`). `index.json` lists both entries with their figures. Every file is
replaced atomically, so a killed run keeps what it had found. The source comes with the
attempt (Attempt.code) and what the drop-in needs of the task (its signature, reference,
output shapes) with `KernelTask`, sent once when the operator starts: nothing here reads the
memory bank.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import structlog
from pydantic import BaseModel, Field

from actors.messages import Attempt
from launch.atomic_file import write_atomically
from launch.kernel_dropin import DropInError, OutputDim, no_dropin_for, render_dropin
from launch.kernel_index import INDEX_FILE, KERNELS_DIR, KernelEntry, KernelIndex, Which
from npu_pool.tasks.signature import KernelSignature

log = structlog.get_logger("evokernel.kernels")

TASKS_DIR = ".tasks"  # kernels/.tasks/<task>.json: each operator's KernelTask
SOURCE_SUFFIX = {"cpu": ".cpp", "cuda": ".cu", "npu": ".cpp", "npu-twin": ".cpp"}  # kernel format, by backend


class KernelTask(BaseModel):
    """What the kernels folder needs of an operator besides its kernels (from its TaskSpec)."""

    task: str
    path: str = ""
    backend: str
    candidate_format: str
    sizes: dict[str, int] = Field(default_factory=dict, description="the size constants it is verified at")
    input_shapes: dict[str, list[int]] = Field(default_factory=dict)
    reference_source: str = Field("", description="the task file as written (original sizes)")
    signature: KernelSignature | None = None
    output_dims: list[list[OutputDim]] = Field(default_factory=list, description="per output, per dimension")
    dropin_error: str | None = Field(None, description="why no drop-in ModelNew can be written")

    @property
    def level_problem(self) -> tuple[int, int] | None:
        """KernelBench's (level, problem) from the task's path: .../level1/4_ReLU.py -> (1, 4)."""
        level = re.fullmatch(r"level_?(\d+)", Path(self.path).parent.name)
        problem = re.match(r"(\d+)_", Path(self.path).name)
        return (int(level.group(1)), int(problem.group(1))) if level and problem else None


def kernel_task(spec: Any, backend: str, candidate_format: str) -> KernelTask:
    """The KernelTask of a loaded npu_pool.tasks.spec.TaskSpec (in the episode's process)."""
    task = KernelTask(task=spec.task_id, path=spec.path, backend=backend, candidate_format=candidate_format,
                      sizes=dict(spec.sizes), input_shapes={t.name: list(t.shape) for t in spec.inputs},
                      reference_source=spec.original_source, signature=spec.kernel_signature)
    if candidate_format == "kernel" and (why_not := no_dropin_for(backend)) is not None:
        task.dropin_error = why_not
    elif candidate_format == "kernel" and spec.kernel_signature is not None:
        try:
            task.output_dims = output_dims(spec)
        except Exception as exc:  # noqa: BLE001 - the kernels are still written, without a drop-in
            task.dropin_error = f"the output shapes cannot be expressed in the input shapes: {exc}"
    return task


def output_dims(spec: Any) -> list[list[OutputDim]]:
    """Each output dimension as the dimension of an input or parameter tensor that equals it in
    every probe of the task (on the meta device: at the verified sizes, the original ones, and
    with each size constant doubled in turn), else as a constant where it never changes."""
    signature: KernelSignature = spec.kernel_signature
    probes = [({a.name: list(a.shape or []) for a in signature.args if a.role in ("input", "parameter")},
               [list(a.shape or []) for a in signature.by_role("output")])]
    # probed where the task was loaded, in its bounded child (npu_pool.tasks.spec.ShapeProbe): the
    # task's code does not run again here
    probes += [(found.tensors, found.outputs) for found in spec.shape_probes]

    def same_everywhere(name: str, k: int, out: int, d: int) -> bool:
        return all(k < len(tensors.get(name, [])) and out < len(outputs) and d < len(outputs[out])
                   and tensors[name][k] == outputs[out][d] for tensors, outputs in probes)

    fitted_tensors, fitted_outputs = probes[0]
    rules: list[list[OutputDim]] = []
    for out, shape in enumerate(fitted_outputs):
        dims = []
        for d, size in enumerate(shape):
            match = next(((name, k) for name, tensor in fitted_tensors.items() for k in range(len(tensor))
                          if same_everywhere(name, k, out, d)), None)
            if match is not None:
                dims.append(OutputDim(arg=match[0], dim=match[1]))
            elif all(out < len(outputs) and d < len(outputs[out]) and outputs[out][d] == size for _, outputs in probes):
                dims.append(OutputDim(value=size))
            else:
                raise DropInError(f"output {out} dimension {d} ({size} at the verified sizes) follows no input dimension")
        rules.append(dims)
    return rules


class KernelFolder:
    """Keeps RUN_DIR/kernels/ up to date from the run's attempts (one writer: the run recorder,
    or the single-process campaign)."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / KERNELS_DIR
        self.tasks: dict[str, KernelTask] = {}
        try:
            index = KernelIndex.load(self.path)
        except (ValueError, OSError) as exc:
            log.warning("kernel_index_unreadable", path=str(self.path / INDEX_FILE), error=str(exc)[:200])
            index = KernelIndex()
        self.entries: dict[tuple[str, str], KernelEntry] = {(e.task, e.kernel): e for e in index.kernels}

    def operator_started(self, task: KernelTask) -> None:
        """The operator (re)starts: what an earlier, unfinished try of it left is removed."""
        self.tasks[task.task] = task
        # Kept on disk too: a restarted run recorder (Ray restarts it, e.g. after an OOM kill)
        # still writes drop-ins for operators that started before.
        (self.path / TASKS_DIR).mkdir(parents=True, exist_ok=True)
        write_atomically(self.path / TASKS_DIR / f"{folder_name(task.task)}.json", task.model_dump_json())
        stale = [key for key in self.entries if key[0] == task.task]
        for key in stale:
            del self.entries[key]
        if stale:
            shutil.rmtree(self.path / folder_name(task.task), ignore_errors=True)
            self._write_index()

    def record(self, attempt: Attempt) -> None:
        """Write the attempt's kernel where it is the operator's first feasible one or its
        fastest so far. Never raises: a problem here must not stop the campaign."""
        if not attempt.feasible or attempt.code is None:
            return
        try:
            first = self.entries.get((attempt.task, "first"))
            if first is None:  # the first feasible kernel is the best so far: one set of files
                best = self._write(attempt, "best", label="best (and first feasible)")
                self.entries[(attempt.task, "first")] = best.model_copy(update={"kernel": "first"})
            else:
                best = self.entries.setdefault((attempt.task, "best"), first.model_copy(update={"kernel": "best"}))
                if attempt.latency_ms is None or (best.latency_ms is not None
                                                  and attempt.latency_ms >= best.latency_ms):
                    return  # not faster (the earlier wins a tie)
                if first.source == best.source:
                    self._first_apart(first)
                    self._write_index()  # first.* in place before best.* is overwritten: a kill keeps both
                self._write(attempt, "best")
            self._write_index()
        except Exception as exc:  # noqa: BLE001 - the attempt itself is recorded in attempts.jsonl
            log.warning("kernel_file_failed", task=attempt.task, error=f"{type(exc).__name__}: {exc}"[:300])

    def _task(self, name: str) -> KernelTask | None:
        if name not in self.tasks:
            saved = self.path / TASKS_DIR / f"{folder_name(name)}.json"
            if saved.is_file():
                self.tasks[name] = KernelTask.model_validate_json(saved.read_text(encoding="utf-8"))
        return self.tasks.get(name)

    def _write(self, attempt: Attempt, which: Which, label: str | None = None) -> KernelEntry:
        """The attempt's files under `which`'s names, and its index entry (the index itself is
        written by the caller)."""
        task = self._task(attempt.task)
        backend = task.backend if task else "unknown"
        source, modelnew, note = self._files(attempt.task, which, label or which, attempt.code or "",
                                             attempt.candidate_format, attempt.attempt_id, attempt.iteration)
        level_problem = task.level_problem if task else None
        entry = KernelEntry(
            task=attempt.task, kernel=which, source=source, modelnew=modelnew,
            modelnew_note=note, latency_ms=attempt.latency_ms, speedup_vs_eager=attempt.speedup_vs_eager,
            iteration=attempt.iteration, attempt_id=attempt.attempt_id, backend=backend,
            candidate_format=attempt.candidate_format, sizes=task.sizes if task else {},
            input_shapes=task.input_shapes if task else {}, level=level_problem[0] if level_problem else None,
            problem=level_problem[1] if level_problem else None, timestamp=attempt.timestamp, stages=attempt.stages)
        self.entries[(attempt.task, which)] = entry
        return entry

    def _first_apart(self, first: KernelEntry) -> None:
        """A faster kernel is about to take the best's names: the first one, kept under them so
        far, gets files of its own (its source read back, its drop-in written as the first's)."""
        code = (self.path / first.source).read_text(encoding="utf-8")
        source, modelnew, note = self._files(first.task, "first", "first", code, first.candidate_format,
                                             first.attempt_id, first.iteration)
        self.entries[(first.task, "first")] = first.model_copy(
            update={"source": source, "modelnew": modelnew, "modelnew_note": note})

    def _files(self, name: str, which: Which, label: str, code: str, fmt: str, attempt_id: str | None,
               iteration: int) -> tuple[str, str | None, str | None]:
        """`<task>/<which>.<ext>` and its drop-in ModelNew: (source, modelnew, why no modelnew),
        paths relative to kernels/. `label` names the kernel in the drop-in's docstring."""
        task = self._task(name)
        folder = self.path / folder_name(name)
        folder.mkdir(parents=True, exist_ok=True)
        suffix = ".py" if fmt == "modelnew" else SOURCE_SUFFIX.get(task.backend if task else "unknown", ".txt")
        source = folder / f"{which}{suffix}"
        write_atomically(source, code)
        relative = str(source.relative_to(self.path))
        if fmt == "modelnew":
            return relative, relative, None
        if task is None:
            return relative, None, "the run recorder never heard of this operator's task: no drop-in ModelNew"
        if task.dropin_error or task.signature is None:
            return relative, None, task.dropin_error or "the task has no kernel signature"
        try:
            text = render_dropin(task=name, which=label, code=code, signature=task.signature,
                                 reference_source=task.reference_source, output_dims=task.output_dims,
                                 backend=task.backend, note=f"attempt {attempt_id}, iteration {iteration}")
        except (DropInError, SyntaxError) as exc:
            return relative, None, str(exc)
        dropin = folder / f"{which}_modelnew.py"
        write_atomically(dropin, text)
        return relative, str(dropin.relative_to(self.path)), None

    def _write_index(self) -> None:
        entries = sorted(self.entries.values(), key=lambda e: (e.task, e.kernel != "best"))
        self.path.mkdir(parents=True, exist_ok=True)
        write_atomically(self.path / INDEX_FILE, KernelIndex(kernels=entries).model_dump_json(indent=2) + "\n")


def folder_name(task: str) -> str:
    """A task name as a folder name (kernels/, replies/): anything but word characters, dots and dashes as _."""
    return re.sub(r"[^\w.-]", "_", task)
