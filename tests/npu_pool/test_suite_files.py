"""The bundled CPU suite (suites/cpu) and the test candidates (tests/npu_pool/candidates).

Checks the data files on their own, without the harness: every task follows the KernelBench
format and runs fast; every candidate names its task and the gate it should stop at; the good
kernel-format candidates, compiled with g++ and called through ctypes with the ABI of
docs/contracts.md, match the reference; the good ModelNew candidates (slow: one load_inline
build each) match it too.
"""

from __future__ import annotations

import ast
import ctypes
import hashlib
import importlib.util
import inspect
import json
import math
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
import torch

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
MODELNEW_BUILD_CACHE = Path.home() / ".cache" / "evokernel" / "test-build"
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


# ----------------------------------------------------------------------------- the suite


def test_suite_has_both_levels_and_enough_tasks():
    level1 = [p for p in TASK_FILES if p.parent.name == "level1"]
    level2 = [p for p in TASK_FILES if p.parent.name == "level2"]
    assert len(level1) + len(level2) >= 40
    assert len(level2) >= 10


def test_task_file_names_are_unique_numbered_ids():
    for level in {p.parent for p in TASK_FILES}:
        ids = [int(p.stem.split("_", 1)[0]) for p in level.glob("*.py")]
        assert sorted(ids) == list(range(1, len(ids) + 1)), f"{level.name}: ids {sorted(ids)}"
    for path in TASK_FILES:
        assert re.fullmatch(r"\d+_[A-Za-z0-9]+", path.stem), path.name


def test_suite_readme_lists_every_task():
    readme = (SUITE / "README.md").read_text()
    missing = [p.stem for p in TASK_FILES if f"| {p.stem} |" not in readme]
    assert not missing, f"suites/cpu/README.md lacks {missing}"


@pytest.mark.parametrize("path", TASK_FILES, ids=_id)
def test_task_follows_the_format_and_runs_fast(path):
    task = load_module(path)
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        assert hasattr(task, attr), f"{path.name} lacks {attr}"
    assert issubclass(task.Model, torch.nn.Module)
    source = path.read_text()
    assert "cuda" not in source and "dtype=" not in source, "tasks never choose device or dtype"

    model, init_args, inputs, outputs = build_reference(task)
    assert isinstance(init_args, list)
    assert all(isinstance(a, int | float) for a in init_args), "init args are plain numbers"
    assert inputs and all(isinstance(i, torch.Tensor) for i in inputs)
    for tensor in inputs:
        assert tensor.device.type == "cpu" and tensor.dtype == torch.float32
    n_forward = len(inspect.signature(model.forward).parameters)
    assert n_forward == len(inputs), "get_inputs() matches forward's arguments"
    assert all(isinstance(o, torch.Tensor) for o in outputs)

    with torch.no_grad():
        start = time.perf_counter()
        model(*inputs)
        elapsed = time.perf_counter() - start
    # Sized for well under a second on 2 idle cores (docs/suite.md); the bound is loose so a
    # busy machine cannot fail it, while a task sized 100x too large still does.
    assert elapsed < 5.0, f"reference took {elapsed:.2f} s"


@pytest.mark.parametrize("path", TASK_FILES, ids=_id)
def test_get_inputs_reads_module_constants_when_called(path):
    task = load_module(path)
    shapes = [tuple(t.shape) for t in task.get_inputs()]
    assert shapes == [tuple(t.shape) for t in task.get_inputs()], "shapes are deterministic"

    constants = {k: v for k, v in vars(task).items() if type(v) is int and not k.startswith("_")}
    changes_a_shape = []
    for name, value in constants.items():
        setattr(task, name, value // 2 if value >= 4 else value + 1)
        try:
            changed = [tuple(t.shape) for t in task.get_inputs()] != shapes
        finally:
            setattr(task, name, value)
        if changed:
            changes_a_shape.append(name)
    assert changes_a_shape, f"no module constant changes an input shape: {sorted(constants)}"
    if "batch_size" in constants:
        assert "batch_size" in changes_a_shape


# ----------------------------------------------------------------------------- candidates


def test_candidate_folders_are_populated():
    assert len(GOOD_KERNELS) >= 10
    assert len(GOOD_MODELNEWS) >= 10
    assert len(list((CANDIDATES / "broken").glob("*"))) >= 8


@pytest.mark.parametrize("path", CANDIDATE_FILES, ids=_id)
def test_candidate_headers_name_an_existing_task_and_a_gate(path):
    headers = candidate_headers(path)
    assert set(headers) == {"task", "expect-gate"}, f"{path.name}: headers {headers}"
    assert headers["expect-gate"] in GATES
    task_path = SUITE / headers["task"]
    assert task_path.is_file(), f"{path.name}: no task {headers['task']}"
    if path.parent.name.startswith("good_"):
        assert headers["expect-gate"] == "ok"
        assert path.stem == task_path.stem, "good candidates are named after their task"
    else:
        assert headers["expect-gate"] != "ok"


_ALLOWED_TORCH_IN_FORWARD = {"empty", "empty_like"}


@pytest.mark.parametrize("path", GOOD_MODELNEWS, ids=_id)
def test_good_modelnew_has_the_reference_signature_and_no_torch_compute(path):
    tree = ast.parse(path.read_text())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    assert "ModelNew" in classes and "Model" not in classes
    methods = {n.name: n for n in classes["ModelNew"].body if isinstance(n, ast.FunctionDef)}

    task = load_module(SUITE / candidate_headers(path)["task"])
    for method in ("__init__", "forward"):
        expected = list(inspect.signature(getattr(task.Model, method)).parameters)
        actual = [a.arg for a in methods[method].args.args]
        assert actual == expected, f"{method}{tuple(actual)} != reference {tuple(expected)}"

    for node in ast.walk(methods["forward"]):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in ("torch", "F"):
                assert node.func.attr in _ALLOWED_TORCH_IN_FORWARD, (
                    f"forward calls {owner.id}.{node.func.attr}"
                )
    assert re.search(r'name="evk_cand_\w+"', path.read_text()), "a distinct extension name"


def test_good_modelnew_extension_names_are_distinct():
    names = [re.search(r'name="(\w+)"', p.read_text()).group(1) for p in GOOD_MODELNEWS]
    assert len(names) == len(set(names))


# ----------------------------------------------------------------------------- kernel ABI


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


@pytest.mark.parametrize("path", GOOD_KERNELS, ids=_id)
def test_good_kernel_declares_the_abi_names_and_types(path):
    task = load_module(SUITE / candidate_headers(path)["task"])
    model, init_args, inputs, expected = build_reference(task)
    defined, commented = defined_declaration(path.read_text())
    assert defined == kernel_declaration(model, task.Model, inputs, expected, init_args)
    assert commented == defined, "the header comment repeats the signature"


@pytest.fixture(scope="session")
def kernel_build_dir(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ not found")
    return tmp_path_factory.mktemp("kernels")


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


@pytest.mark.parametrize("path", GOOD_KERNELS, ids=_id)
def test_good_kernel_compiles_and_matches_the_reference(path, kernel_build_dir):
    build, library = compile_kernel(path, kernel_build_dir)
    assert build.returncode == 0, build.stderr[-2000:]
    outputs, expected = run_kernel(library, load_module(SUITE / candidate_headers(path)["task"]))
    for i, (actual, reference) in enumerate(zip(outputs, expected, strict=True)):
        assert_close(actual, reference, f"{path.name} output {i}")


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


@pytest.mark.parametrize("path", BROKEN_KERNELS, ids=_id)
def test_broken_kernel_fails_at_its_gate(path, kernel_build_dir):
    headers = candidate_headers(path)
    build, library = compile_kernel(path, kernel_build_dir)
    if headers["expect-gate"] == "compile":
        assert build.returncode != 0 and "error" in build.stderr
        return
    assert build.returncode == 0, build.stderr[-2000:]
    task = load_module(SUITE / headers["task"])
    if headers["expect-gate"] == "correctness":
        outputs, expected = run_kernel(library, task)
        close = [
            a.shape == e.shape and torch.allclose(a, e, atol=ATOL, rtol=RTOL)
            for a, e in zip(outputs, expected, strict=True)
        ]
        assert not all(close), "a broken candidate matched the reference"
        return
    assert headers["expect-gate"] == "runtime"
    try:
        child = subprocess.run(
            [sys.executable, "-c", _CHILD, str(library), json.dumps(_child_spec(task))],
            capture_output=True,
            text=True,
            timeout=2,
        )
    except subprocess.TimeoutExpired:
        return  # hung, as labelled
    assert child.returncode != 0 and "returned" not in child.stdout, "the kernel ran to completion"


# ----------------------------------------------------------------------------- ModelNew (slow)


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


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("path", GOOD_MODELNEWS, ids=_id)
def test_good_modelnew_builds_and_matches_the_reference(path, monkeypatch):
    candidate = import_candidate(path, monkeypatch)
    actual, expected = run_modelnew(candidate, load_module(SUITE / candidate_headers(path)["task"]))
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert_close(a, e, f"{path.name} output {i}")


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("path", BROKEN_MODELNEWS, ids=_id)
def test_broken_modelnew_fails_at_its_gate(path, monkeypatch):
    headers = candidate_headers(path)
    if headers["expect-gate"] == "compile":
        with pytest.raises(RuntimeError, match="Error building extension"):
            import_candidate(path, monkeypatch)
        return
    assert headers["expect-gate"] == "correctness"
    candidate = import_candidate(path, monkeypatch)
    actual, expected = run_modelnew(candidate, load_module(SUITE / headers["task"]))
    close = [
        a.shape == e.shape and torch.allclose(a, e, atol=ATOL, rtol=RTOL)
        for a, e in zip(actual, expected, strict=True)
    ]
    assert not all(close), "a broken candidate matched the reference"
