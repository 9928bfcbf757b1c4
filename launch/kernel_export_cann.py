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

from launch.kernel_files import TASKS_DIR, KernelTask
from launch.kernel_index import KERNELS_DIR, KernelEntry

ASCEND_BACKENDS = ("npu", "npu-twin")
PROGRAM = "evokernel_check"
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


KERNEL_UNIT = """// What ascendc_library compiles: the prelude the check compiled before the kernel, then the
// kernel exactly as verified (kernel.cpp).
#include "evokernel_tiling.h"
#include "kernel.cpp"
"""

CMAKE = """# {task}, the run's {which} kernel, as a CANN kernel launch project (evokernel export --layout cann).
cmake_minimum_required(VERSION 3.16)
project(evokernel_{project} LANGUAGES CXX)

set(SOC_VERSION "{soc}" CACHE STRING "system on chip type: the one the kernel was checked for")
set(ASCEND_CANN_PACKAGE_PATH "$ENV{{ASCEND_HOME_PATH}}" CACHE PATH "CANN installation")
if(NOT ASCEND_CANN_PACKAGE_PATH)
    set(ASCEND_CANN_PACKAGE_PATH "/usr/local/Ascend/ascend-toolkit/latest")
endif()
set(RUN_MODE "npu" CACHE STRING "run mode")
if(EXISTS ${{ASCEND_CANN_PACKAGE_PATH}}/compiler/tikcpp/ascendc_kernel_cmake)
    set(ASCENDC_CMAKE_DIR ${{ASCEND_CANN_PACKAGE_PATH}}/compiler/tikcpp/ascendc_kernel_cmake)
elseif(EXISTS ${{ASCEND_CANN_PACKAGE_PATH}}/tools/tikcpp/ascendc_kernel_cmake)
    set(ASCENDC_CMAKE_DIR ${{ASCEND_CANN_PACKAGE_PATH}}/tools/tikcpp/ascendc_kernel_cmake)
else()
    message(FATAL_ERROR "ascendc_kernel_cmake not found under ${{ASCEND_CANN_PACKAGE_PATH}}: source CANN's set_env.sh")
endif()
include(${{ASCENDC_CMAKE_DIR}}/ascendc.cmake)

ascendc_library(kernels STATIC kernel_unit.cpp)
# as the check assumed: {option_words}
ascendc_compile_options(kernels PRIVATE {option})

add_executable({program} main.cpp)
target_compile_options({program} PRIVATE -O2 -std=c++17)
target_link_libraries({program} PRIVATE host_intf_pub kernels dl)
""".replace("{program}", PROGRAM)

RUN_SH = """#!/bin/bash
cd "$(dirname "$0")" && cmake -S . -B build -DSOC_VERSION="${{SOC_VERSION:-{soc}}}" && cmake --build build -j && ./build/{program}
"""

README = """# {task}: the {which} kernel as a CANN kernel launch project

Exported by `evokernel export --layout cann`. The kernel (`kernel.cpp`, byte for byte as verified)
passed the {backend} backend's checks at iteration {iteration} ({latency}, {timing}).

On a machine with an Ascend NPU and CANN:

    source /usr/local/Ascend/ascend-toolkit/set_env.sh   # your CANN's set_env.sh
    bash run.sh                                          # SOC_VERSION={soc} unless set

`run.sh` builds with CMake and runs `{program}`, which reads `input/`, launches the kernel, writes
`output/<name>.bin` and compares each output with the task's reference (`output/golden_<name>.bin`):
one line per output, then `[evokernel] PASS` (exit 0) or `FAIL` (exit 1).

As checked: SoC {soc}; {block_dim} blocks ({blocks_from}); the tiling in `input/tiling.bin`
(KernelTiling at the verified sizes: {sizes}); Bisheng's automatic synchronisation {auto_sync},
set in CMakeLists.txt (`ascendc_compile_options`). The inputs are drawn from the task's
`get_inputs()`; the reference's outputs were computed from them on the CPU.

On the CPU, the EvoKernel twin builds and runs this same project:
`python -m npu_pool.backends.ascendc_twin.project .`
""".replace("{program}", PROGRAM)

MAIN = r"""// {task}, the run's {which} kernel ({backend} verdict), launched as the check launched it: {block_dim}
// blocks ({soc}), its KernelTiling (input/tiling.bin) and the system workspace; the outputs are
// compared with the task's reference (output/golden_*.bin). Generated by evokernel export --layout cann.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclrtlaunch_kernel.h"

#define CHECK_ACL(call)                                                                                     \
    do {{                                                                                                   \
        const aclError status_ = (call);                                                                    \
        if (status_ != ACL_SUCCESS) {{                                                                      \
            std::fprintf(stderr, "%s failed with %d: %s\n", #call, int(status_), aclGetRecentErrMsg());      \
            return 2;                                                                                       \
        }}                                                                                                  \
    }} while (0)

namespace {{
enum class Type {{ F32, F16, BF16, I64, I32, I16, I8, U8, BOOL }};
struct Tensor {{
    const char* name;
    size_t bytes;
    Type type;
    bool output;
    double atol, rtol;  // |out - golden| <= atol + rtol |golden| (outputs; integers exactly)
}};
constexpr uint32_t kBlockDim = {block_dim};
constexpr size_t kWorkspaceBytes = {workspace};  // the system workspace the harness gives a launch
constexpr size_t kTilingBytes = {tiling_bytes};
const Tensor kTensors[] = {{  // the kernel's GM_ADDR arguments before workspace and tiling, in order
{tensors}
}};
constexpr size_t kCount = sizeof(kTensors) / sizeof(kTensors[0]);

bool ReadFile(const std::string& path, void* data, size_t bytes) {{
    FILE* f = std::fopen(path.c_str(), "rb");
    const bool ok = f != nullptr && std::fread(data, 1, bytes, f) == bytes;
    if (f != nullptr) std::fclose(f);
    if (!ok) std::fprintf(stderr, "cannot read %zu bytes from %s\n", bytes, path.c_str());
    return ok;
}}

bool WriteFile(const std::string& path, const void* data, size_t bytes) {{
    FILE* f = std::fopen(path.c_str(), "wb");
    const bool ok = f != nullptr && std::fwrite(data, 1, bytes, f) == bytes;
    if (f != nullptr) std::fclose(f);
    return ok;
}}

size_t ElementBytes(Type t) {{
    switch (t) {{
        case Type::F32: case Type::I32: return 4;
        case Type::F16: case Type::BF16: case Type::I16: return 2;
        case Type::I64: return 8;
        default: return 1;
    }}
}}

double Value(const uint8_t* p, Type t) {{
    switch (t) {{
        case Type::F32: {{ float v; std::memcpy(&v, p, 4); return v; }}
        case Type::F16: {{
            uint16_t h; std::memcpy(&h, p, 2);
            const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
            const double magnitude = exponent == 0 ? std::ldexp(mantissa, -24)
                                   : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                   : std::ldexp(mantissa + 1024, exponent - 25);
            return (h >> 15) ? -magnitude : magnitude;
        }}
        case Type::BF16: {{ uint16_t b; std::memcpy(&b, p, 2); uint32_t w = uint32_t(b) << 16; float v; std::memcpy(&v, &w, 4); return v; }}
        case Type::I64: {{ int64_t v; std::memcpy(&v, p, 8); return double(v); }}
        case Type::I32: {{ int32_t v; std::memcpy(&v, p, 4); return v; }}
        case Type::I16: {{ int16_t v; std::memcpy(&v, p, 2); return v; }}
        case Type::I8: return double(int8_t(*p));
        default: return *p;
    }}
}}

// The elements of an output that differ from the reference (NaN matches NaN), the first reported.
size_t Mismatches(const Tensor& t, const uint8_t* got, const uint8_t* want) {{
    const size_t size = ElementBytes(t.type), count = t.bytes / size;
    const bool exact = t.type != Type::F32 && t.type != Type::F16 && t.type != Type::BF16;
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {{
        const double g = Value(got + i * size, t.type), w = Value(want + i * size, t.type);
        const bool same = exact ? g == w : (std::isnan(g) && std::isnan(w)) || g == w ||
                                           std::fabs(g - w) <= t.atol + t.rtol * std::fabs(w);
        if (!same && wrong++ == 0) std::printf("  %s[%zu] = %.9g, expected %.9g\n", t.name, i, g, w);
    }}
    return wrong;
}}
}}  // namespace

int main(int argc, char* argv[])
{{
    (void)argc;
    (void)argv;
    std::vector<std::vector<uint8_t>> host(kCount);
    std::vector<uint8_t> tiling(kTilingBytes);
    for (size_t i = 0; i < kCount; ++i) {{
        host[i].assign(kTensors[i].bytes, 0xFF);  // outputs start as NaN bytes: the kernel must write every element
        if (!kTensors[i].output && !ReadFile(std::string("input/") + kTensors[i].name + ".bin", host[i].data(), host[i].size())) return 2;
    }}
    if (!ReadFile("input/tiling.bin", tiling.data(), tiling.size())) return 2;

    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDevice(0));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));
    void* device[kCount];
    void* workspace = nullptr;
    void* tilingDevice = nullptr;
    for (size_t i = 0; i < kCount; ++i) {{
        CHECK_ACL(aclrtMalloc(&device[i], host[i].size(), ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_ACL(aclrtMemcpy(device[i], host[i].size(), host[i].data(), host[i].size(), ACL_MEMCPY_HOST_TO_DEVICE));
    }}
    CHECK_ACL(aclrtMalloc(&workspace, kWorkspaceBytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMalloc(&tilingDevice, tiling.size(), ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK_ACL(aclrtMemcpy(tilingDevice, tiling.size(), tiling.data(), tiling.size(), ACL_MEMCPY_HOST_TO_DEVICE));

    ACLRT_LAUNCH_KERNEL(kernel)(kBlockDim, stream, {launch_args}, workspace, tilingDevice);
    CHECK_ACL(aclrtSynchronizeStream(stream));

    size_t failed = 0;
    for (size_t i = 0; i < kCount; ++i) {{
        if (!kTensors[i].output) continue;
        CHECK_ACL(aclrtMemcpy(host[i].data(), host[i].size(), device[i], host[i].size(), ACL_MEMCPY_DEVICE_TO_HOST));
        WriteFile(std::string("output/") + kTensors[i].name + ".bin", host[i].data(), host[i].size());
        std::vector<uint8_t> golden(host[i].size());
        if (!ReadFile(std::string("output/golden_") + kTensors[i].name + ".bin", golden.data(), golden.size())) return 2;
        const size_t wrong = Mismatches(kTensors[i], host[i].data(), golden.data());
        std::printf("%s: %zu of %zu elements differ from the reference\n", kTensors[i].name, wrong,
                    kTensors[i].bytes / ElementBytes(kTensors[i].type));
        failed += wrong != 0;
    }}
    for (size_t i = 0; i < kCount; ++i) CHECK_ACL(aclrtFree(device[i]));
    CHECK_ACL(aclrtFree(workspace));
    CHECK_ACL(aclrtFree(tilingDevice));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("[evokernel] %s\n", failed ? "FAIL" : "PASS");
    return failed ? 1 : 0;
}}
"""
