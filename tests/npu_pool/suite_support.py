"""Reusable helpers for the bundled CPU suite (suites/cpu) and the test candidates
(tests/npu_pool/candidates): loading tasks, reading candidate headers, building the reference,
the kernel ABI of docs/contracts.md (arguments and declaration), compiling and calling a
kernel-format candidate, and importing and running a ModelNew candidate."""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import inspect
import math
import re
import subprocess
from pathlib import Path
from types import ModuleType

import torch

from npu_pool.paths import cache_root

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "suites" / "cpu"
CANDIDATES = Path(__file__).resolve().parent / "candidates"
TASK_FILES = sorted(SUITE.glob("level*/*.py"))
CANDIDATE_FILES = sorted(p for p in CANDIDATES.glob("*/*") if p.suffix in (".py", ".c", ".cpp"))
GOOD_KERNELS = sorted((CANDIDATES / "good_kernel").glob("*.c*"))
GOOD_MODELNEWS = sorted((CANDIDATES / "good_modelnew").glob("*.py"))
BROKEN_KERNELS = sorted((CANDIDATES / "broken").glob("*.c*"))
BROKEN_MODELNEWS = sorted((CANDIDATES / "broken").glob("*.py"))
GATES = {"ok", "hack", "compile", "correctness", "runtime"}
MODELNEW_BUILD_CACHE = cache_root() / "test-build"  # $XDG_CACHE_HOME honoured, as the harness tests' cache
ATOL = RTOL = 1e-4  # KernelBench's float32 tolerances
HEADER = re.compile(r"^\s*(?:#|//)\s*(task|expect-gate):\s*(\S+)\s*$")


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def load_module(path: Path, name: str | None = None) -> ModuleType:
    """Executes a Python file as a fresh module (tasks are not a package)."""
    name = name or f"evk_suite_{path.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def candidate_headers(path: Path) -> dict[str, str]:
    """The `task:` and `expect-gate:` header lines at the top of a candidate file."""
    headers: dict[str, str] = {}
    for line in path.read_text().splitlines()[:10]:
        match = HEADER.match(line)
        if match:
            headers[match.group(1)] = match.group(2)
    return headers


def build_reference(task: ModuleType, seed: int = 0):
    """(model, init_args, inputs, outputs) with fixed seeds, as a harness would build them."""
    torch.manual_seed(seed)
    init_args = task.get_init_inputs()
    model = task.Model(*init_args)
    inputs = task.get_inputs()
    with torch.no_grad():
        out = model(*[i.clone() if isinstance(i, torch.Tensor) else i for i in inputs])
    outputs = list(out) if isinstance(out, tuple | list) else [out]
    return model, init_args, inputs, outputs


def assert_close(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    assert actual.shape == expected.shape, (
        f"{what}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    )
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    if expected.dtype.is_floating_point:
        torch.testing.assert_close(
            actual, expected, atol=ATOL, rtol=RTOL, msg=lambda m: f"{what}: {m}"
        )
    else:
        assert torch.equal(actual, expected), (
            f"{what}: {(actual != expected).sum().item()} elements differ"
        )


def _scalar(value) -> ctypes._SimpleCData:
    if isinstance(value, bool | int):
        return ctypes.c_int64(int(value))
    if isinstance(value, float):
        return ctypes.c_double(value)
    raise TypeError(f"no C form for {value!r}")


def kernel_arguments(model, task_model_cls, inputs, outputs, init_args) -> list:
    """The ctypes arguments in docs/contracts.md's order: inputs, parameters and buffers,
    outputs, forward scalars, constructor scalars, then every dimension of every tensor."""
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    tensors += [t.detach() for _, t in model.named_parameters()]
    tensors += [t for _, t in model.named_buffers()]
    tensors += outputs
    assert all(t.is_contiguous() for t in tensors)
    args: list = [ctypes.c_void_p(t.data_ptr()) for t in tensors]
    args += [_scalar(v) for v in inputs if not isinstance(v, torch.Tensor)]
    assert len(init_args) == len(inspect.signature(task_model_cls.__init__).parameters) - 1
    args += [_scalar(v) for v in init_args]
    args += [ctypes.c_int64(size) for t in tensors for size in t.shape]
    return args


_C_TYPES = {torch.float32: "float", torch.int64: "int64_t"}


def kernel_declaration(model, task_model_cls, inputs, outputs, init_args) -> list[str]:
    """`type name` of every argument, in the same order as kernel_arguments()."""
    forward_names = list(inspect.signature(model.forward).parameters)
    init_names = list(inspect.signature(task_model_cls.__init__).parameters)[1:]
    tensors = [(n, t, "const ") for n, t in zip(forward_names, inputs, strict=True)]
    tensors += [(n.replace(".", "_"), t, "const ") for n, t in model.named_parameters()]
    tensors += [(n.replace(".", "_"), t, "const ") for n, t in model.named_buffers()]
    tensors += [("out" if len(outputs) == 1 else f"out{i}", t, "") for i, t in enumerate(outputs)]
    decl = [f"{const}{_C_TYPES[t.dtype]}* {name}" for name, t, const in tensors]
    decl += [
        f"{'double' if isinstance(v, float) else 'int64_t'} {n}"
        for n, v in zip(init_names, init_args, strict=True)
    ]
    decl += [f"int64_t {name}_d{i}" for name, t, _ in tensors for i in range(t.dim())]
    return decl


def defined_declaration(source: str) -> tuple[list[str], list[str]]:
    """(the definition's arguments, the header comment's), whitespace normalised."""
    comment = " ".join(line.lstrip("/ ") for line in source.splitlines() if line.startswith("//"))
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("//"))
    found = []
    for text in (code, comment):
        match = re.search(r'extern "C" void kernel\((.*?)\)', text, re.S)
        assert match, 'no extern "C" void kernel(...)'
        found.append([" ".join(arg.split()) for arg in match.group(1).split(",")])
    return found[0], found[1]


def compile_kernel(path: Path, build_dir: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """The harness's compiler line for the kernel-source format (docs/contracts.md)."""
    library = build_dir / f"{path.parent.name}_{path.stem}.so"
    build = subprocess.run(
        [
            "g++",
            "-O3",
            "-march=native",
            "-fopenmp",
            "-shared",
            "-fPIC",
            "-std=c++17",
            str(path),
            "-o",
            str(library),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return build, library


def run_kernel(library: Path, task: ModuleType) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Calls the kernel in this process on NaN-filled outputs: (outputs, reference outputs)."""
    model, init_args, inputs, expected = build_reference(task)
    outputs = [
        torch.full_like(e, math.nan) if e.is_floating_point() else torch.full_like(e, -7)
        for e in expected
    ]
    kernel = ctypes.CDLL(str(library)).kernel
    kernel.restype = None
    with torch.no_grad():
        kernel(*kernel_arguments(model, task.Model, inputs, outputs, init_args))
    return outputs, expected


# A crashing or hanging kernel runs in a child process with plain zeroed buffers (no torch):
# arguments are ["buf", nbytes], ["i64", value] or ["f64", value].
_CHILD = """
import ctypes, json, sys
spec = json.loads(sys.argv[2])
keep, args = [], []
for kind, value in spec:
    if kind == "buf":
        keep.append(ctypes.create_string_buffer(value))
        args.append(ctypes.cast(keep[-1], ctypes.c_void_p))
    else:
        args.append(ctypes.c_int64(value) if kind == "i64" else ctypes.c_double(value))
ctypes.CDLL(sys.argv[1]).kernel(*args)
print("returned")
"""


def _child_spec(task: ModuleType) -> list:
    model, init_args, inputs, expected = build_reference(task)
    spec = []
    for arg in kernel_arguments(model, task.Model, inputs, expected, init_args):
        if isinstance(arg, ctypes.c_void_p):
            spec.append(None)  # filled below, in the same order as the tensors
        else:
            spec.append(["i64" if isinstance(arg, ctypes.c_int64) else "f64", arg.value])
    tensors = (
        list(inputs)
        + [p for _, p in model.named_parameters()]
        + [b for _, b in model.named_buffers()]
        + expected
    )
    sizes = iter(t.numel() * t.element_size() for t in tensors)
    return [item if item is not None else ["buf", max(1, next(sizes))] for item in spec]


def import_candidate(path: Path, monkeypatch) -> ModuleType:
    """Imports a ModelNew file, building its extension under a cache keyed by its source:
    load_inline builds under TORCH_EXTENSIONS_DIR, kept between runs, so only a changed
    candidate is rebuilt."""
    source = path.read_text()
    cache = MODELNEW_BUILD_CACHE / hashlib.sha1(source.encode()).hexdigest()
    cache.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(cache))
    return load_module(path, name=f"evk_candidate_{path.parent.name}_{path.stem}")


def run_modelnew(candidate: ModuleType, task: ModuleType) -> tuple[list, list[torch.Tensor]]:
    """(ModelNew's outputs, the reference's) with the reference's state_dict loaded."""
    model, init_args, inputs, expected = build_reference(task)
    new_model = candidate.ModelNew(*init_args)
    assert sorted(new_model.state_dict()) == sorted(model.state_dict()), (
        "the reference's parameter names"
    )
    new_model.load_state_dict(model.state_dict(), strict=True)
    with torch.no_grad():
        out = new_model(*[i.clone() for i in inputs])
    return (list(out) if isinstance(out, tuple | list) else [out]), expected
