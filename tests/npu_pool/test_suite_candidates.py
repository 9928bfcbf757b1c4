"""The test candidates (tests/npu_pool/candidates), checked without the harness: every
candidate names its task and the gate it should stop at; the good kernel-format candidates,
compiled with g++ and called through ctypes with the ABI of docs/contracts.md, match the
reference; the good ModelNew candidates (slow: one load_inline build each) match it too."""

from __future__ import annotations

import ast
import inspect
import json
import re
import shutil
import subprocess
import sys

import pytest
import torch

from .suite_support import (
    _CHILD,
    ATOL,
    BROKEN_KERNELS,
    BROKEN_MODELNEWS,
    CANDIDATE_FILES,
    CANDIDATES,
    GATES,
    GOOD_KERNELS,
    GOOD_MODELNEWS,
    RTOL,
    SUITE,
    _child_spec,
    _id,
    assert_close,
    build_reference,
    candidate_headers,
    compile_kernel,
    defined_declaration,
    import_candidate,
    kernel_declaration,
    load_module,
    run_kernel,
    run_modelnew,
)

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
    elif path.parent.name == "broken":
        assert headers["expect-gate"] != "ok"
    # other folders (a backend's own, e.g. npu_twin/) mix good and broken kernels


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


@pytest.mark.parametrize("path", GOOD_KERNELS, ids=_id)
def test_good_kernel_compiles_and_matches_the_reference(path, kernel_build_dir):
    build, library = compile_kernel(path, kernel_build_dir)
    assert build.returncode == 0, build.stderr[-2000:]
    outputs, expected = run_kernel(library, load_module(SUITE / candidate_headers(path)["task"]))
    for i, (actual, reference) in enumerate(zip(outputs, expected, strict=True)):
        assert_close(actual, reference, f"{path.name} output {i}")


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
