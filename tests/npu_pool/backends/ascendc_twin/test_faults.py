"""One wrong kernel per hardware rule of the twin: each stops with a twin fault naming the
rule, the API call and the kernel's source line (kernels/faults/*.cpp mark it `// FAULT`)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.npu_pool.backends.ascendc_twin.twin_support import (
    KERNELS,
    kernel_files,
    make_tiling,
    marked_line,
)

WRONG = kernel_files(KERNELS / "faults")
BLOCKS = {"block_overlap": 2, "block_race": 2, "sync_all": 2}


def expected_rule(path) -> str:
    return re.search(r"expect-fault: (\S+)", path.read_text()).group(1)


@pytest.mark.parametrize("path", WRONG, ids=[p.stem for p in WRONG])
def test_wrong_kernel_faults_with_its_rule_and_line(faults, path):
    a = np.arange(1024, dtype=np.float32)
    c = np.full(1024, np.nan, dtype=np.float32)
    # a kernel launched without the framework (framework=False) must set the system workspace itself
    run = faults.run(path.stem, BLOCKS.get(path.stem, 1), [("a", a, 0), ("b", np.zeros(8, np.float32), 0), ("c", c, 1)],
                     make_tiling(), framework=path.stem != "matmul_workspace")
    assert run.rc == 1, f"{path.stem} ran clean"
    parts = run.fault_parts()
    assert parts["rule"] == expected_rule(path), run.fault
    assert parts["file"] == "kernel.cpp"
    assert int(parts["line"]) == marked_line(path), run.fault
    named = parts["api"].split("(")[0].split("::")[-1]
    if named in ("operator[]", "operator()"):  # no location of its own: the API call before it
        assert "in an expression after the API call on this line" in parts["message"]
    else:
        assert named in path.read_text().splitlines()[marked_line(path) - 1] or parts["api"] == "REGIST_MATMUL_OBJ" \
            or parts["api"].startswith("Matmul"), run.fault


def test_every_rule_has_a_wrong_kernel():
    rules = {expected_rule(p) for p in WRONG}
    assert rules >= {"ub-capacity", "alignment", "queue-depth", "queue-order", "use-after-free", "repeat-limit",
                     "gm-bounds", "gm-readonly", "block-overlap", "block-race", "sync-order", "mask-range", "local-bounds",
                     "matmul-tiling", "matmul-workspace", "assert", "sync-all", "library-tiling"}


def test_ub_capacity_is_configurable(faults):
    a = np.zeros(1024, np.float32)
    tensors = [("a", a, 0), ("b", np.zeros(8, np.float32), 0), ("c", np.zeros(1024, np.float32), 1)]
    assert faults.run("ub_capacity", 1, tensors, make_tiling(), ub_bytes=512 * 1024).fault == ""
    assert faults.run("ub_capacity", 1, tensors, make_tiling(), soc="Ascend310P").fault == ""  # 256 KiB UB
    run = faults.run("ub_capacity", 1, tensors, make_tiling(), soc="Ascend310P", ub_bytes=200 * 1024)
    assert run.rc == 1 and "the 204800-byte Unified Buffer of one core (Ascend310P)" in run.fault


def test_block_overlap_names_both_blocks(faults):
    a = np.zeros(1024, np.float32)
    run = faults.run("block_overlap", 4, [("a", a, 0), ("b", a[:8].copy(), 0), ("c", np.zeros(1024, np.float32), 1)],
                     make_tiling())
    assert "block 1 writes byte 0 of 'c' that block 0 also wrote" in run.fault
    assert run.fault.endswith("(block 1 of 4)")
    assert faults.run("block_overlap", 1, [("a", a, 0), ("b", a[:8].copy(), 0),
                                           ("c", np.zeros(1024, np.float32), 1)], make_tiling()).rc == 0


def test_launch_interface_edges(fidelity):
    a = np.zeros(1024, np.float32)
    tensors = [("a", a, 0), ("b", a.copy(), 0), ("c", np.zeros(1024, np.float32), 1)]
    run = fidelity.run("add_tiled", 0, tensors, make_tiling((1024, 256, 2)))
    assert run.rc == 1 and run.fault_parts()["rule"] == "invalid-argument" and "block_dim 0" in run.fault
    # a clean launch after a fault reports no fault, and an unknown SoC keeps its name
    run = fidelity.run("add_tiled", 2, tensors, make_tiling((1024, 256, 2)), soc="Ascend999X", ai_cores=4)
    assert run.rc == 0 and run.fault == ""
    assert run.profile["soc"]["name"] == "Ascend999X" and run.profile["ai_cores"] == 4
