"""`evokernel export --layout cann`: each Ascend C kernel of a run as a CANN kernel launch project.

For every kernel-format kernel of the npu or npu-twin backend, `<out>/<task>/` holds a
self-contained direct-launch project in the layout of CANN's KernelLaunch samples:

    kernel.cpp          the kernel, byte for byte as verified
    kernel_unit.cpp     what ascendc_library compiles: the prelude the check compiled before the
    evokernel_tiling.h  kernel (KernelTiling, CopyTiling), then kernel.cpp
    main.cpp            host program: reads input/*.bin, launches with the check's block count and
                        tiling (input/tiling.bin), compares with output/golden_*.bin
    CMakeLists.txt      ascendc_library for SOC_VERSION, with the --cce-auto-sync the check assumed
    run.sh              build and run, one line
    input/, output/     the inputs and the reference's outputs at the verified sizes (.bin)
    README.md           what was checked, and the two commands to run it on an Ascend machine

The twin builds and runs the same project on the CPU (npu_pool.backends.ascendc_twin.project).
A kernel with a host half (TilingFunc), a direct-launch program or an op project is left out,
with why: a kernel launch project has no place for the twin's HostTiling, a torch extension or
an op's registration.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from launch.kernel_export_cann_files import CMAKE, KERNEL_UNIT, MAIN, PROGRAM, README, RUN_SH
from launch.kernel_files import TASKS_DIR, KernelTask
from launch.kernel_index import KERNELS_DIR, KernelEntry

ASCEND_BACKENDS = ("npu", "npu-twin")
TYPES = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64", "int32": "I32", "int16": "I16",
         "int8": "I8", "uint8": "U8", "bool": "BOOL"}


class CannSettings(BaseModel):
    """How the run checked its kernels (summary.json's settings, the twin's SoC now)."""

    auto_sync: bool = True
    atol: float | None = None
    rtol: float | None = None
    seed: int = 0
    soc: str
    ai_cores: int


def run_settings(run_dir: Path) -> CannSettings:
    """The run's harness settings that decide how its kernels were checked, and the SoC the twin
    models (EVOKERNEL_TWIN_SOC and its overrides, as when the run checked them)."""
    from npu_pool.backends.ascendc_twin.backend import NpuTwinBackend

    try:
        harness = json.loads((Path(run_dir) / "summary.json").read_text()).get("settings", {}).get("harness", {})
    except (OSError, ValueError):
        harness = {}
    soc = NpuTwinBackend().soc_params()
    return CannSettings(auto_sync=harness.get("npu_twin", {}).get("auto_sync", True), atol=harness.get("atol"),
                        rtol=harness.get("rtol"), seed=harness.get("seed", 0), soc=soc["name"],
                        ai_cores=int(soc["ai_cores"]))


def why_not_exported(entry: KernelEntry, source: str, task: KernelTask | None) -> str | None:
    """Why a kept kernel cannot become a kernel launch project, or None."""
    from npu_pool.backends.ascendc_twin.build import has_host_half
    from npu_pool.backends.ascendc_twin.direct import is_direct_program

    if entry.backend not in ASCEND_BACKENDS or entry.candidate_format != "kernel":
        return f"not an Ascend C kernel ({entry.backend} backend, {entry.candidate_format} format)"
    if task is None or task.signature is None:
        return "the run kept no task record (kernels/.tasks/) with the kernel's signature"
    if is_direct_program(source):
        return "a direct-launch program (a torch_npu extension with its own host code): build it as an extension"
    if has_host_half(source):
        return ("a host half (TilingFunc): a kernel launch project has no place for the twin's HostTiling or an "
                "op project's registration; only the kernel-only form is exported")
    return None


def reference_tensors(task: KernelTask, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The task's reference at the verified sizes: every tensor of the kernel's signature by its
    argument name (inputs, parameters, the reference's outputs), and forward's call arguments."""
    import torch

    from npu_pool.tasks.sizing import as_output_list, exec_task, with_constants

    module = exec_task(with_constants(task.reference_source, task.sizes), task.path or task.task)
    torch.manual_seed(seed)
    inputs = list(module.get_inputs())
    model = module.Model(*module.get_init_inputs()).eval()
    with torch.no_grad():
        outputs = iter(as_output_list(model(*inputs)))
    signature = task.signature
    call = dict(zip(signature.forward_args, inputs, strict=False))
    named = dict(model.named_parameters()) | dict(model.named_buffers())
    tensors = {}
    for arg in signature.args:
        if arg.role == "input":
            tensors[arg.name] = call[arg.source]
        elif arg.role == "parameter":
            tensors[arg.name] = named[arg.source]
        elif arg.role == "output":
            tensors[arg.name] = next(outputs)
    return {name: t.detach().contiguous() for name, t in tensors.items()}, call


def kernel_tiling(task: KernelTask, tensors: dict[str, Any], call: dict[str, Any], block_dim: int) -> bytes:
    """KernelTiling as the harness's wrapper fills it (npu_pool.backends.ascendc.make_ascend_module)."""
    from npu_pool.backends.ascendc import tiling_fields, tiling_type

    signature = task.signature
    tiling = tiling_type(signature)()
    for arg, ctype in tiling_fields(signature):
        if arg.role == "size":
            value: Any = tensors[arg.source].shape[arg.index]
        else:
            value = call[arg.source] if arg.source in call else signature.init_args[arg.source]
            if arg.index is not None:
                value = value[arg.index]
        setattr(tiling, arg.name, int(value) if ctype == "int64_t" else float(value))
    tiling.block_dim = block_dim
    return bytes(tiling)


def _raw(tensor: Any) -> bytes:
    import torch

    return tensor.reshape(-1).view(torch.uint8).numpy().tobytes()


def write_project(folder: Path, entry: KernelEntry, source: str, task: KernelTask, settings: CannSettings) -> list[str]:
    """The project of one kernel in `folder`; the files written, relative to it."""
    import torch

    from npu_pool.backends.ascendc import (
        KERNEL_PRELUDE,
        SYSTEM_WORKSPACE_BYTES,
        render_tiling_struct,
    )
    from npu_pool.gates.correctness import tolerances

    auto_sync = settings.auto_sync if entry.backend == "npu-twin" else True  # the npu backend builds with CANN's default
    tensors, call = reference_tensors(task, settings.seed)
    args = [a for a in task.signature.args if a.is_tensor]
    rows = []
    for arg in args:
        t = tensors[arg.name]
        atol, rtol = tolerances(t.dtype, settings.atol, settings.rtol) if arg.role == "output" else (0.0, 0.0)
        dtype = str(t.dtype).removeprefix("torch.")
        if dtype not in TYPES:
            raise ValueError(f"tensor {arg.name} is {dtype}, which the host program does not compare")
        rows.append(f'    {{"{arg.name}", {t.numel() * t.element_size()}u, Type::{TYPES[dtype]}, '
                    f"{'true' if arg.role == 'output' else 'false'}, {atol!r}, {rtol!r}}},")
    tiling = kernel_tiling(task, tensors, call, settings.ai_cores)
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "input").mkdir(parents=True)
    (folder / "output").mkdir()
    files = {
        "kernel.cpp": source,
        "evokernel_tiling.h": "// What the check compiled before the kernel (npu_pool.backends.ascendc.KERNEL_PRELUDE).\n"
                              "#pragma once\n" + KERNEL_PRELUDE.format(tiling=render_tiling_struct(task.signature)),
        "kernel_unit.cpp": KERNEL_UNIT,
        "main.cpp": MAIN.format(task=task.task, which=entry.kernel, backend=entry.backend, block_dim=settings.ai_cores,
                                soc=settings.soc, workspace=SYSTEM_WORKSPACE_BYTES, tiling_bytes=len(tiling),
                                tensors="\n".join(rows), launch_args=", ".join(f"device[{i}]" for i in range(len(args)))),
        "CMakeLists.txt": CMAKE.format(task=task.task, which=entry.kernel, soc=settings.soc,
                                       project=re.sub(r"\W", "_", task.task),
                                       option="--cce-auto-sync" if auto_sync else "--cce-auto-sync=off",
                                       option_words="CANN's default, the compiler inserts the flags between PIPE_S "
                                       "and V/MTE2/MTE3" if auto_sync else "--cce-auto-sync=off (harness.npu_twin."
                                       "auto_sync: false): the kernel's own flags order PIPE_S"),
        "run.sh": RUN_SH.format(soc=settings.soc, program=PROGRAM),
        "README.md": README.format(task=task.task, which=entry.kernel, backend=entry.backend, soc=settings.soc,
                                   block_dim=settings.ai_cores, iteration=entry.iteration,
                                   latency=f"{entry.latency_ms:.4g} ms" if entry.latency_ms else "no latency",
                                   timing="modelled" if entry.backend == "npu-twin" else "measured",
                                   sizes=", ".join(f"{k}={v}" for k, v in task.sizes.items()) or "as written",
                                   auto_sync="on (CANN's default)" if auto_sync else "off (--cce-auto-sync=off)",
                                   blocks_from="the twin's launch for this SoC" if entry.backend == "npu-twin" else
                                   "the twin's count for this SoC (the NPU run launched the device's vector cores, "
                                   "which the run does not record)"),
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    (folder / "run.sh").chmod(0o755)
    data = {"input/tiling.bin": tiling}
    for arg in args:
        where = f"output/golden_{arg.name}.bin" if arg.role == "output" else f"input/{arg.name}.bin"
        data[where] = _raw(tensors[arg.name].to(torch.device("cpu")))
    for name, blob in data.items():
        (folder / name).write_bytes(blob)
    return sorted(files) + sorted(data)


def export_cann(run_dir: Path, out_dir: Path, entries: list[KernelEntry]) -> tuple[list[str], list[str], list[dict]]:
    """A kernel launch project per exportable entry: (files written, kernels left out with why,
    the index rows of those exported)."""
    kernels = Path(run_dir) / KERNELS_DIR
    written, skipped, exported = [], [], []
    settings: CannSettings | None = None
    for entry in entries:
        folder = Path(entry.source).parent.name  # the task's folder name, as launch.kernel_files spells it
        source = (kernels / entry.source).read_text()
        record = kernels / TASKS_DIR / f"{folder}.json"
        task = KernelTask.model_validate_json(record.read_text()) if record.is_file() else None
        why = why_not_exported(entry, source, task)
        if why is not None:
            skipped.append(f"{entry.task}: {why}")
            continue
        if settings is None:
            settings = run_settings(run_dir)
        try:
            files = write_project(out_dir / folder, entry, source, task, settings)
        except Exception as exc:  # noqa: BLE001 - the task's own code runs here: say what failed, go on
            skipped.append(f"{entry.task}: the project could not be written: {type(exc).__name__}: {exc}"[:400])
            continue
        written += [f"{folder}/{name}" for name in files]
        exported.append({**entry.model_dump(), "project": folder, "soc": settings.soc, "block_dim": settings.ai_cores,
                         "auto_sync": settings.auto_sync if entry.backend == "npu-twin" else True})
    return written, skipped, exported
