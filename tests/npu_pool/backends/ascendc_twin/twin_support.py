"""Builds Ascend C kernels against the CPU twin (npu_pool/backends/ascendc_twin/include) and
runs them through its runtime interface (twin_runtime.h), the way the npu-twin backend does.

Many kernels share one shared library (each in its own namespace, `kernel` renamed), so a test
session pays for a few g++ runs, not one per kernel; libraries are cached by the hash of their
source, the twin's headers and the compiler."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from npu_pool.backends.ascendc_twin.build import RAW_GM_FLAGS
from npu_pool.paths import build_cache_dir, cache_root
from tests.npu_pool.harness_support import harness_config

ROOT = Path(__file__).resolve().parents[4]
INCLUDE = ROOT / "npu_pool" / "backends" / "ascendc_twin" / "include"
KERNELS = Path(__file__).resolve().parent / "kernels"
# the npu-twin backend's candidate kernels (test_backend_npu_twin.py, test_sandbox_gates.py)
CANDIDATE_KERNELS = ROOT / "tests" / "npu_pool" / "candidates" / "npu_twin"
BUILD_CACHE = cache_root() / "twin-tests"  # beside the harness tests' test-build ($XDG_CACHE_HOME honoured)
# instrumented as the backend instruments a kernel (raw pointer accesses, twin_raw_gm.h)
FLAGS = ["-std=c++17", "-shared", "-fPIC", "-pthread", "-w", *RAW_GM_FLAGS]
GUARD_BYTES = 1024  # each tensor's guard band on either side, as the backend's launch gives it
FAULT_LINE = re.compile(r"^twin fault \[(?P<rule>[a-z-]+)\]: (?P<api>\S.*?) at (?P<file>[\w.]+):(?P<line>\d+): (?P<message>.+)$")

# What every test kernel of kernels/ reads from its tiling argument.
TEST_PRELUDE = """
struct TestTiling {
    int64_t n[8];  // sizes and counts
    float f[8];    // scalars
};
__aicore__ inline TestTiling ReadTiling(GM_ADDR tiling)
{
    TestTiling t;
    auto words = reinterpret_cast<__gm__ uint32_t*>(tiling);
    auto out = reinterpret_cast<uint32_t*>(&t);
    for (uint32_t i = 0; i < sizeof(t) / 4; ++i) out[i] = words[i];
    return t;
}
// The npu format's names for kernels written like the published samples (tests/npu_pool/backends/ascendc_twin/
// kernels/samples): the task's sizes arrive as KernelTiling, a struct is copied by CopyTiling.
using KernelTiling = TestTiling;
template <typename T>
__aicore__ inline void CopyTiling(T* local, GM_ADDR tiling)
{
    auto words = reinterpret_cast<__gm__ uint32_t*>(tiling);
    auto out = reinterpret_cast<uint32_t*>(local);
    for (uint32_t i = 0; i < sizeof(T) / sizeof(uint32_t); ++i) out[i] = words[i];
}
"""
HOST_HALF = re.compile(r"\bvoid\s+TilingFunc\s*\(")
SYSTEM_WORKSPACE_BYTES = 16 << 20


@dataclass
class KernelUnit:
    """One kernel of a library: its source (a whole translation unit) and entry arity."""

    name: str
    source: str
    tensors: int  # GM_ADDR arguments before workspace and tiling
    entry: str = "kernel"


def make_tiling(ints: Sequence[int] = (), floats: Sequence[float] = ()) -> bytes:
    n = np.zeros(8, dtype=np.int64)
    n[: len(ints)] = ints
    f = np.zeros(8, dtype=np.float32)
    f[: len(floats)] = floats
    return n.tobytes() + f.tobytes()


def compiler_version() -> str:
    return subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]


def headers_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(INCLUDE.rglob("*.h")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def library_source(units: Sequence[KernelUnit]) -> str:
    parts = ['#include "kernel_operator.h"', '#include "lib/matmul_intf.h"', '#include "tiling/tiling_api.h"', TEST_PRELUDE]
    for unit in units:
        parts.append(f"namespace evk_unit_{unit.name} {{\n#define {unit.entry} evk_entry_{unit.name}\n"
                     f"{unit.source}\n#undef {unit.entry}\n}}  // namespace evk_unit_{unit.name}\n")
    parts.append('#line 1 "launcher.cpp"\n#include "twin_runtime.h"')
    for unit in units:
        args = ", ".join(f"(GM_ADDR)args[{i}]" for i in range(unit.tensors + 2))
        # framework: the launcher sets the system workspace, as CANN's framework does (0: the
        # kernel must call SetSysWorkspace itself, as in a <<<>>> launch)
        parts.append(f'extern "C" uint32_t evk_launch_{unit.name}(uint32_t block_dim, void** args, int framework) {{\n'
                     f"    return evk_twin::Launch(block_dim, [&] {{ evk_unit_{unit.name}::evk_entry_{unit.name}({args}); }},\n"
                     f"                            framework ? (GM_ADDR)args[{unit.tensors}] : nullptr);\n}}")
        if HOST_HALF.search(unit.source):
            parts.append(HOST_EXPORT.format(name=unit.name))
    return "\n".join(parts) + "\n"


HOST_EXPORT = """extern "C" int evk_host_{name}(const void* shapes, uint32_t cores, void* out, uint32_t* size, uint32_t* blocks,
                                 uint64_t* workspace) {{
    KernelTiling t;
    std::memcpy(&t, shapes, sizeof t);
    static HostTiling host;
    host = HostTiling();
    host.coreNum = host.blockDim = cores;
    evk_unit_{name}::TilingFunc(t, host);
    std::memcpy(out, host.tilingData, host.tilingSize);
    *size = host.tilingSize;
    *blocks = host.blockDim;
    *workspace = host.userWorkspaceSize;
    return 0;
}}"""


def start_build(units: Sequence[KernelUnit], cache: Path, optimise: str = "-O0") -> tuple[Path, subprocess.Popen | None, Path]:
    """Starts g++ on the library of `units` unless cached: (library, process or None, source).
    -O0 halves the compile time; kernels that loop over millions of elements want -O1."""
    text = library_source(units)
    flags = [*FLAGS, optimise]
    key = hashlib.sha256("\0".join([text, headers_digest(), " ".join(flags), compiler_version()]).encode()).hexdigest()[:20]
    cache.mkdir(parents=True, exist_ok=True)
    library = cache / f"twin-{key}.so"
    source = cache / f"twin-{key}.cpp"
    if library.exists():
        return library, None, source
    # this process's own copy of the source: another test process may be writing the shared one
    own = cache / f".twin-{key}-{os.getpid()}.cpp"
    own.write_text(text)
    os.replace(own, source)
    tmp = cache / f".twin-{key}-{os.getpid()}.so"
    process = subprocess.Popen(["nice", "g++", *flags, f"-I{INCLUDE}", str(source), "-o", str(tmp)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return library, process, source


def finish_build(library: Path, process: subprocess.Popen | None) -> Path:
    if process is None:
        return library
    output, _ = process.communicate()
    if process.returncode != 0:
        raise AssertionError(f"g++ failed on {library.name}:\n{output[-6000:]}")
    tmp = Path(process.args[-1])
    os.replace(tmp, library)
    return library


@dataclass
class Run:
    rc: int
    fault: str
    profile: dict
    outputs: dict[str, np.ndarray] = field(default_factory=dict)

    def fault_parts(self) -> dict[str, str]:
        match = FAULT_LINE.match(self.fault.rstrip())
        assert match, f"not a twin fault line: {self.fault!r}"
        return match.groupdict()


class TwinLibrary:
    """A built library: run one of its kernels on numpy arrays."""

    def __init__(self, path: Path):
        self.path = path
        self.lib = ctypes.CDLL(str(path))
        self.lib.evk_twin_configure.argtypes = [ctypes.c_uint64, ctypes.c_uint32, ctypes.c_char_p]
        self.lib.evk_twin_register.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_char_p, ctypes.c_int]
        self.lib.evk_twin_guard.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64]
        self.lib.evk_twin_fault.restype = ctypes.c_char_p
        self.lib.evk_twin_profile_json.restype = ctypes.c_char_p

    def host(self, name: str, shapes: bytes, soc: str = "Ascend910B1", ai_cores: int = 0) -> tuple[bytes, int, int]:
        """Runs a kernel's host half (TilingFunc) on `shapes` (a TestTiling): the kernel's tiling
        bytes, the block count and the user workspace bytes, as the npu-twin launcher does."""
        self.lib.evk_twin_configure(0, ai_cores, soc.encode())
        out = ctypes.create_string_buffer(1 << 16)
        size, blocks, workspace = ctypes.c_uint32(), ctypes.c_uint32(), ctypes.c_uint64()
        fn = getattr(self.lib, f"evk_host_{name}")
        fn.restype = ctypes.c_int
        cores = ai_cores or {"Ascend310P": 8, "Ascend910B3": 20, "Ascend910B4": 20}.get(soc, 24)
        fn(shapes, cores, out, ctypes.byref(size), ctypes.byref(blocks), ctypes.byref(workspace))
        return out.raw[: size.value], blocks.value, workspace.value

    def run_two_halves(self, name: str, tensors: Sequence[tuple[str, np.ndarray, int]], shapes: bytes, **kw) -> Run:
        """The two-half form: the host half first, then the launch on its blocks and tiling, with
        the system workspace followed by the user workspace it asked for."""
        tiling, blocks, workspace = self.host(name, shapes, kw.get("soc", "Ascend910B1"), kw.get("ai_cores", 0))
        return self.run(name, blocks, tensors, tiling, workspace_bytes=SYSTEM_WORKSPACE_BYTES + workspace, **kw)

    def run(self, name: str, block_dim: int, tensors: Sequence[tuple[str, np.ndarray, int]], tiling: bytes,
            soc: str = "Ascend910B1", ub_bytes: int = 0, ai_cores: int = 0, workspace_bytes: int = 1 << 16,
            framework: bool = True) -> Run:
        """tensors: (name, array, writable) in the entry's order; writable as evk_twin_register.
        framework: the launcher sets the system workspace (False: the kernel must). Each tensor
        runs in a copy between two guard bands of GUARD_BYTES (0xFF bytes), declared to the twin
        as the backend's launch does; the writable ones are copied back after the launch."""
        self.lib.evk_twin_configure(ub_bytes, ai_cores, soc.encode())
        self.lib.evk_twin_reset()
        keep = []
        pointers = []
        guarded = []
        for tname, array, writable in tensors:
            assert array.flags.c_contiguous
            band = np.full(array.nbytes + 2 * GUARD_BYTES, 0xFF, dtype=np.uint8)
            inner = band[GUARD_BYTES:GUARD_BYTES + array.nbytes].view(array.dtype).reshape(array.shape)
            inner[...] = array
            self.lib.evk_twin_register(inner.ctypes.data, inner.nbytes, tname.encode(), writable)
            self.lib.evk_twin_guard(inner.ctypes.data, GUARD_BYTES, GUARD_BYTES)
            pointers.append(inner.ctypes.data)
            guarded.append((tname, inner, writable))
        workspace = np.zeros(workspace_bytes, dtype=np.uint8)
        tiling_buffer = np.frombuffer(bytearray(tiling), dtype=np.uint8)
        self.lib.evk_twin_register(workspace.ctypes.data, workspace.nbytes, b"workspace", 2)
        self.lib.evk_twin_register(tiling_buffer.ctypes.data, tiling_buffer.nbytes, b"tiling", 0)
        keep += [workspace, tiling_buffer]
        args = (ctypes.c_void_p * (len(pointers) + 2))(*pointers, workspace.ctypes.data, tiling_buffer.ctypes.data)
        launch = getattr(self.lib, f"evk_launch_{name}")
        launch.restype = ctypes.c_uint32
        launch.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_int]
        rc = launch(block_dim, args, 1 if framework else 0)
        fault = self.lib.evk_twin_fault().decode()
        profile = json.loads(self.lib.evk_twin_profile_json().decode())
        for (_name, array, writable), (_, inner, _) in zip(tensors, guarded, strict=True):
            if writable:
                array[...] = inner
        return Run(rc, fault, profile, {tname: array for tname, array, writable in tensors if writable})


def kernel_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.cpp"))


def unit_from_file(path: Path, tensors: int = 3) -> KernelUnit:
    """A kernel file as a unit; `// tensors: N` in its text overrides the arity."""
    text = path.read_text()
    declared = re.search(r"^// tensors: (\d+)", text, re.MULTILINE)
    return KernelUnit(path.stem, f'#line 1 "kernel.cpp"\n{text}', int(declared.group(1)) if declared else tensors)


def marked_line(path: Path, mark: str = "// FAULT") -> int:
    """The 1-based line of `path` carrying `mark` (where a wrong kernel must fault)."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if mark in line:
            return number
    raise AssertionError(f"{path.name} has no {mark!r} line")


# --- the npu bundle's template kernels, on the tasks they were worked for -------------------


@dataclass
class TemplateCase:
    """A template of memory_actor/bundles/npu.yaml with its task: what to build and run."""

    name: str
    task: str
    unit: KernelUnit
    signature: object
    model: object
    inputs: list
    outputs: list  # the reference's


def template_cases() -> list[TemplateCase]:
    import inspect

    import yaml

    from npu_pool.backends.ascendc import kernel_translation_unit
    from npu_pool.tasks.signature import derive_signature
    from tests.npu_pool.suite_support import build_reference, load_module

    bundle = yaml.safe_load((ROOT / "memory_actor" / "bundles" / "npu.yaml").read_text())
    cases = []
    for item in bundle["items"]:
        if not item.get("name", "").startswith("example_"):  # the family examples (issue 41)
            continue
        import tempfile

        from memory_actor.seeding import example_tasks

        task = item["task"]  # its task is in bundles/examples.yaml, outside every suite
        with tempfile.TemporaryDirectory() as folder:  # loaded once: the module needs no file after
            path = Path(folder) / f"{task}.py"
            path.write_text(example_tasks()[task][1])
            module = load_module(path)
        model, init_args, inputs, outputs = build_reference(module)
        forward_names = list(inspect.signature(model.forward).parameters)
        init_names = list(inspect.signature(module.Model.__init__).parameters)[1:]
        signature = derive_signature(model, forward_names, inputs, outputs, init_names, init_args)
        source = kernel_translation_unit(item["content"], signature)
        tensors = sum(1 for a in signature.args if a.is_tensor)
        cases.append(TemplateCase(item["name"], task, KernelUnit(item["name"], source, tensors, signature.function),
                                  signature, model, inputs, outputs))
    return cases


def run_template(library: TwinLibrary, case: TemplateCase, block_dim: int) -> Run:
    """Runs a template as the npu-twin backend would: tensors in the signature's order (outputs
    pre-filled with NaN), the KernelTiling struct filled from their shapes and the scalars."""
    from npu_pool.backends.ascendc import tiling_fields, tiling_type

    sig = case.signature
    call = dict(zip(sig.forward_args, case.inputs, strict=False))
    named = dict(case.model.named_parameters())
    named.update(dict(case.model.named_buffers()))
    tensors, shapes = [], {}
    outputs = iter(case.outputs)
    for arg in sig.args:
        if arg.role in ("input", "parameter"):
            source = call[arg.source] if arg.role == "input" else named[arg.source]
            array = np.ascontiguousarray(source.detach().numpy())
            tensors.append((arg.name, array, 0))
        elif arg.role == "output":
            array = np.full(tuple(next(outputs).shape), np.nan, dtype=np.float32)
            tensors.append((arg.name, array, 1))
        else:
            continue
        shapes[arg.name] = array.shape
    tiling = tiling_type(sig)()
    for arg, ctype in tiling_fields(sig):
        if arg.role == "size":
            value = shapes[arg.source][arg.index]
        else:
            value = call[arg.source] if arg.source in call else sig.init_args[arg.source]
            if arg.index is not None:
                value = value[arg.index]
        setattr(tiling, arg.name, int(value) if ctype == "int64_t" else float(value))
    tiling.block_dim = block_dim
    return library.run(case.unit.name, block_dim, tensors, bytes(tiling))


def line_of(path: Path, text: str) -> int:
    """The first line of `path` holding `text` (1-based): where a fault message must point."""
    return next(n for n, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


def kernel_cache() -> Path:
    """The persistent test build cache the sandboxed worker also reads (a rerun compiles nothing)."""
    return build_cache_dir(harness_config().build_cache_dir) / "kernels"
