"""Raw pointers to global memory (issue 53, point 4): a kernel that reads or writes global memory
through pointers cast from its GM_ADDR arguments, bypassing GlobalTensor, meets the same rules
(twin_raw_gm.h). Each hazard kernel of kernels/raw/ (`// expect-fault: <rule>`) stops with its
rule at its `// FAULT` line; each correct one (`// expect: ok`), the work split over blocks with a
tail, computes the right values."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.npu_pool.backends.ascendc_twin import twin_support as ts

RAW = ts.KERNELS / "raw"
KERNELS = ts.kernel_files(RAW)
HAZARDS = [p for p in KERNELS if "expect-fault:" in p.read_text()]
CORRECT = [p for p in KERNELS if "expect: ok" in p.read_text()]
TOTAL = 1000  # not a multiple of the block counts below: every split has a tail


@pytest.fixture(scope="module")
def raw():
    library, process, _ = ts.start_build([ts.unit_from_file(p) for p in KERNELS], ts.BUILD_CACHE)
    return ts.TwinLibrary(ts.finish_build(library, process))


def relu6(x: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x, 0.0), 6.0).astype(np.float32)


def run(raw, name: str, blocks: int, x: np.ndarray, out: np.ndarray, total: int = TOTAL) -> ts.Run:
    return raw.run(name, blocks, [("x", x, 0), ("out", out, 1)], ts.make_tiling((total,)))


def inputs() -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(-3.0, 9.0, TOTAL, dtype=np.float32)
    return x, np.full(TOTAL, np.nan, dtype=np.float32)


@pytest.mark.parametrize("path", HAZARDS, ids=[p.stem for p in HAZARDS])
def test_raw_hazard_faults_with_its_rule_at_its_line(raw, path):
    x, out = inputs()
    result = run(raw, path.stem, 4 if path.stem != "store_past_end" else 1, x, out)
    assert result.rc == 1, f"{path.stem} ran clean"
    parts = result.fault_parts()
    assert parts["rule"] == re.search(r"expect-fault: (\S+)", path.read_text()).group(1), result.fault
    assert parts["api"] in ("raw load", "raw store"), result.fault
    assert (parts["file"], int(parts["line"])) == ("kernel.cpp", ts.marked_line(path)), result.fault


def test_every_block_writing_the_whole_output_names_both_blocks(raw):
    # v3's 45_ReLU6: block 0 runs first and writes everything; block 1's first store collides
    x, out = inputs()
    result = run(raw, "every_block_whole_output", 24, x, out)
    assert "raw store at kernel.cpp:" in result.fault
    assert "block 1 writes byte 0 of 'out' that block 0 also wrote" in result.fault
    assert result.fault.endswith("(block 1 of 24)")
    # on one block the same kernel is correct: nothing else writes the output
    x, out = inputs()
    assert run(raw, "every_block_whole_output", 1, x, out).fault == ""
    np.testing.assert_array_equal(out, relu6(x))


def test_past_the_end_names_the_tensor_and_the_byte(raw):
    x, out = inputs()
    result = run(raw, "store_past_end", 1, x, out)
    assert f"writes 4 bytes at byte {4 * TOTAL} of 'out' ({4 * TOTAL} bytes), past its end" in result.fault
    x, out = inputs()
    result = run(raw, "load_past_end", 1, x, out)
    assert f"reads 4 bytes at byte {4 * TOTAL} of 'x' ({4 * TOTAL} bytes), past its end" in result.fault
    # a tail that fits the rounding is no fault: 1024 elements over 4 blocks of 256
    x = np.ones(1024, np.float32)
    out = np.full(1024, np.nan, np.float32)
    assert run(raw, "tail_overrun", 4, x, out, total=1024).fault == ""
    np.testing.assert_array_equal(out, 2 * x)


def test_raw_read_of_another_blocks_store_after_syncall_is_ordered(raw):
    x = np.arange(TOTAL, dtype=np.float32)
    for blocks in (1, 3, 8):
        out = np.full(TOTAL, np.nan, dtype=np.float32)
        result = run(raw, "partials_syncall", blocks, x, out)
        assert result.fault == "", result.fault
        assert out[0] == pytest.approx(float(x.sum()), rel=1e-5)


@pytest.mark.parametrize("path", [p for p in CORRECT if p.stem != "partials_syncall"],
                         ids=[p.stem for p in CORRECT if p.stem != "partials_syncall"])
@pytest.mark.parametrize("blocks", [1, 3, 7, 24])
def test_correct_raw_kernels_split_over_blocks_are_accepted(raw, path, blocks):
    x, out = inputs()
    result = run(raw, path.stem, blocks, x, out)
    assert result.rc == 0 and result.fault == "", result.fault
    np.testing.assert_array_equal(out, relu6(x))



def test_the_callbacks_helpers_are_not_instrumented(raw):
    """The callbacks' slow path calls the twin's own helpers, which at -O0 are not inlined: were
    they instrumented, an access of theirs to the watch's own memory, where that lies near a
    watched tensor (the address layout varies from run to run), would re-enter the slow path
    without end (a flaky SIGSEGV in the twin tests until 2026-12-03). raw_access also refuses to
    re-enter itself (RawWatch::in_access); this checks the run helpers' code."""
    import shutil
    import subprocess

    if shutil.which("objdump") is None:
        pytest.skip("needs objdump")
    listing = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", str(raw.path)], capture_output=True,
                             text=True, check=True, timeout=120).stdout
    bodies = {}
    for block in listing.split("\n\n"):
        head = re.match(r"[0-9a-f]+ <(evk_twin::RawRun::(\w+)\(.*?\) const)>:", block.strip())
        if head:
            bodies[head.group(2)] = block
    assert {"empty", "covers", "continued_by"} <= set(bodies), sorted(bodies)
    for name, body in bodies.items():
        assert "__asan_" not in body, f"RawRun::{name} is instrumented"
