"""Copy a run folder's kernels (RUN_DIR/kernels/, launch.kernel_files) into a folder of their own.

Three layouts: `evokernel` keeps the run folder's (`<task>/<which>.<ext>`, the ModelNew file
beside it, and an index.json of what was exported; a first kernel the run kept under the
best's names, being the best too, is exported under the first's); `kernelbench` writes one
ModelNew file per problem named as KernelBench's scripts read them (scripts/eval_from_generations.py:
`level_<L>_problem_<N>_sample_0_kernel.py` in the run's folder), so its evaluation runs over
them unchanged; kernels without a ModelNew file or a KernelBench level/problem are left out and
said so; `cann` writes each Ascend C kernel as a CANN kernel launch project (launch.kernel_export_cann),
with an index.json. Nothing here reads the memory bank.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from launch.kernel_index import KERNELS_DIR, KernelEntry, KernelIndex

Layout = Literal["evokernel", "kernelbench", "cann"]
MANIFEST = "evokernel_export.json"


class ExportError(Exception):
    """Nothing to export: no kernels folder, or an unreadable index."""


class Exported(BaseModel):
    written: list[str] = Field(default_factory=list, description="files written, relative to the output folder")
    skipped: list[str] = Field(default_factory=list, description="kernels left out, with why")


def kernelbench_name(entry: KernelEntry, sample: int = 0) -> str:
    return f"level_{entry.level}_problem_{entry.problem}_sample_{sample}_kernel.py"


def named_as(relative: str, which: str) -> str:
    """A kernel file's path with `which`'s name: `4_ReLU/best.cpp` -> `4_ReLU/first.cpp` for
    the first kernel, where the run folder kept it once, as the best (docs/contracts.md)."""
    path = Path(relative)
    for kept in ("best", "first"):
        if path.name.startswith((f"{kept}.", f"{kept}_")):
            return str(path.with_name(which + path.name[len(kept):]))
    return relative


def load_entries(run_dir: Path, which: str) -> list[KernelEntry]:
    kernels = Path(run_dir) / KERNELS_DIR
    if not (kernels / "index.json").is_file():
        raise ExportError(f"{run_dir} has no {KERNELS_DIR}/index.json: the run found no feasible kernel "
                          "(or ran before runs kept their kernels)")
    try:
        index = KernelIndex.load(kernels)
    except ValueError as exc:
        raise ExportError(f"{kernels / 'index.json'} is not a kernel index: {exc}") from None
    return [e for e in index.kernels if e.kernel == which]


def export_kernels(run_dir: Path, out_dir: Path, layout: Layout = "evokernel", which: str = "best") -> Exported:
    """Copy the run's `which` (best or first) kernels into out_dir in `layout`."""
    entries = load_entries(run_dir, which)
    source_root = Path(run_dir) / KERNELS_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    done = Exported()
    if layout == "cann":
        from launch.kernel_export_cann import export_cann

        done.written, done.skipped, projects = export_cann(Path(run_dir), out_dir, entries)
        (out_dir / "index.json").write_text(json.dumps({"run_dir": str(Path(run_dir).resolve()), "layout": layout,
                                                        "kernel": which, "kernels": projects}, indent=2) + "\n")
        return done
    exported: list[KernelEntry] = []
    for entry in entries:
        if layout == "kernelbench":
            if entry.modelnew is None:
                done.skipped.append(f"{entry.task}: no ModelNew file ({entry.modelnew_note})")
                continue
            if entry.level is None or entry.problem is None:
                done.skipped.append(f"{entry.task}: no KernelBench level/problem (the task is not in a "
                                    "levelN/ folder or its name does not start with its number)")
                continue
            name = kernelbench_name(entry)
            if name in done.written:
                done.skipped.append(f"{entry.task}: {name} is already another task's")
                continue
            shutil.copyfile(source_root / entry.modelnew, out_dir / name)
            done.written.append(name)
            exported.append(entry.model_copy(update={"modelnew": name, "source": name}))
        else:
            files = {entry.source} | ({entry.modelnew} if entry.modelnew else set())
            for relative in sorted(files):
                target = named_as(relative, which)
                (out_dir / target).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source_root / relative, out_dir / target)
                done.written.append(target)
            exported.append(entry.model_copy(update={
                "source": named_as(entry.source, which),
                "modelnew": named_as(entry.modelnew, which) if entry.modelnew else None}))
    manifest = out_dir / (MANIFEST if layout == "kernelbench" else "index.json")
    manifest.write_text(json.dumps({"run_dir": str(Path(run_dir).resolve()), "layout": layout, "kernel": which,
                                    "kernels": [e.model_dump() for e in exported]}, indent=2) + "\n")
    return done
