"""bench/ascendc_heldout.py: the manifest names runnable tasks; fetch lays a published project
out as its build does; the unit joins a kernel's own files as the preprocessor would and renames
only the entry. The published kernels themselves stay outside the repository: these tests use
a small project of our own words, committed to a throwaway git repository."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bench import ascendc_heldout as heldout

OWN_KERNEL = (Path(__file__).resolve().parents[1] / "npu_pool" / "backends" / "ascendc_twin" / "kernels"
              / "op_project" / "add_op.cpp")


def test_every_manifest_entry_names_a_task_a_pinned_repository_and_an_expectation():
    manifest = heldout.load_manifest()
    assert len(manifest["kernels"]) == 10
    for kernel in manifest["kernels"]:
        assert (heldout.SUITE / kernel["task"]).is_file(), kernel["task"]
        assert len(manifest["repos"][kernel["repo"]]) == 40
        assert kernel["expect"]["verdict"] in ("accepted", "refused") and kernel["entry"]


def make_published_repo(root: Path) -> tuple[Path, str]:
    """An op project in the MultiKernelBench layout (three C++ strings in a Python file)."""
    host, kernel = OWN_KERNEL.read_text().split("extern \"C\"", 1)
    kernel = '#include "kernel_operator.h"\n#include "sum_op_tiling.h"\nextern "C"' + kernel.replace("void kernel(", "void sum_op(")
    operator = '#include "sum_op_tiling.h"\n' + host
    text = (f"host_tiling_src = {json.dumps('#pragma once')}\n"
            f"host_operator_src = {json.dumps(operator)}\n"
            f"kernel_src = {json.dumps(kernel)}\nmodel_src = 'class ModelNew: pass'\n")
    (root / "prompts").mkdir(parents=True)
    (root / "prompts" / "sum_op.py").write_text(text)
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "published"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    return root, commit


def test_fetch_lays_out_the_op_project_and_the_unit_renames_only_the_entry(tmp_path, monkeypatch):
    clone, commit = make_published_repo(tmp_path / "clone")
    entry = {"name": "sum_op", "task": "level1/1_Add.py", "entry": "sum_op", "repo": "own/project",
             "path": "prompts/sum_op.py", "form": "mkb-op"}
    files = heldout.published_files(entry, clone, commit)
    assert sorted(files) == ["op_host/sum_op.cpp", "op_host/sum_op_tiling.h", "op_kernel/sum_op.cpp"]
    folder = tmp_path / "heldout" / "sum_op"
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    unit = heldout.joined_unit(folder)
    assert unit.count("#pragma once") == 1 and '#include "sum_op_tiling.h"' not in unit  # inlined once
    assert unit.index("TilingFunc") < unit.index("sum_op(")  # host before kernel
    assert '#include "kernel_operator.h"' in unit  # the toolkit's headers stay
    renamed = heldout.renamed_entry(unit, "sum_op")
    assert "void kernel(" in renamed and "sum_op(" not in renamed
    assert renamed.replace("void kernel(", "void sum_op(") == unit
    with pytest.raises(ValueError):
        heldout.renamed_entry(unit, "missing_entry")


@pytest.mark.slow
def test_run_verifies_a_fetched_kernel_through_the_npu_twin_gates(tmp_path, monkeypatch):
    clone, commit = make_published_repo(tmp_path / "clone")
    entry = {"name": "sum_op", "task": "level1/1_Add.py", "entry": "sum_op", "repo": "own/project",
             "path": "prompts/sum_op.py", "form": "mkb-op", "expect": {"verdict": "accepted"}}
    monkeypatch.setenv("EVK_HELDOUT_DIR", str(tmp_path / "heldout"))
    for rel, text in heldout.published_files(entry, clone, commit).items():
        path = tmp_path / "heldout" / "sum_op" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    row = heldout.verdict_row(entry, trials=1)
    assert row["verdict"] == "accepted" and row["as_expected"], row
    assert row["sizes"] == {"batch_size": 128, "dim": 16384} and row["second_sizes"] == "accepted"
