"""The happens-before check's own hazard suite (issue 53): each kernel of kernels/hazards/ carries
one hazard (`// hazard: <rule>`, the faulting line marked `// HAZARD`) and, with n[0] = 1, the
same kernel correctly synchronised. Both directions: the hazard is refused with its rule and
line, the synchronised form accepted with the right values; queue-based and TBuf-based."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.npu_pool.backends.ascendc_twin.twin_support import (
    BUILD_CACHE,
    KERNELS,
    TwinLibrary,
    finish_build,
    kernel_files,
    make_tiling,
    marked_line,
    start_build,
    unit_from_file,
)

HAZARDS = kernel_files(KERNELS / "hazards")
BLOCKS = {"gather_in_first_block": 4, "gather_in_last_block": 4, "scalar_write_cached": 4, "workspace_shared_slot": 2}
# kernels whose hazard CANN's default build (--cce-auto-sync) synchronises itself
NEEDS_NO_AUTO_SYNC = {"scalar_set_then_copy_out", "copy_in_then_scalar_get"}
A = (np.arange(1024, dtype=np.float32) * 0.5 - 100.0).astype(np.float32)
EXPECTED = {
    "tbuf_copy_in_to_vector": (slice(0, 1024), 2 * A),
    "tbuf_vector_to_copy_out": (slice(0, 1024), 2 * A),
    "tbuf_reuse_across_tiles": (slice(0, 1024), 2 * A),
    "scalar_set_then_copy_out": (slice(0, 8), np.arange(8, dtype=np.float32)),
    "copy_in_then_scalar_get": (slice(0, 8), np.full(8, A[0], np.float32)),
    "accumulator_never_cleared": (slice(0, 256), A.reshape(4, 256).sum(axis=0, dtype=np.float32)),
    "flag_never_waited": (slice(0, 1024), 2 * A),
    "gather_in_first_block": (slice(0, 32), A[:32]),
    "gather_in_last_block": (slice(0, 32), A[:32]),
    "scalar_write_cached": (slice(0, 4), np.arange(1, 5, dtype=np.float32)),
    "queue_in_copied_out": (slice(0, 1024), A),
    "queue_pipeline": (slice(0, 1024), 2 * A + 1),
    "workspace_round_trip": (slice(0, 256), A[:256] + 1),
    "copy_outs_overlap": (slice(0, 256), 2 * A[:256]),
    "workspace_shared_slot": (slice(0, 8), A[8:16]),
    "flag_set_twice": (slice(0, 512), A[:512] + A[512:]),
    "wait_before_set_held": (slice(0, 1024), 2 * A),
    "wait_on_scalar_before_set": (slice(0, 8), np.full(8, A[0], np.float32)),
    "wait_then_barrier_all": (slice(0, 1024), 2 * A),
}


@pytest.fixture(scope="module")
def hazards() -> TwinLibrary:
    library, process, _ = start_build([unit_from_file(p) for p in HAZARDS], BUILD_CACHE)
    return TwinLibrary(finish_build(library, process))


def run(lib: TwinLibrary, name: str, synced: bool, auto_sync: bool = True):
    lib.lib.evk_twin_set_auto_sync(1 if auto_sync else 0)
    c = np.full(1024, np.nan, dtype=np.float32)
    try:
        result = lib.run(name, BLOCKS.get(name, 1), [("a", A.copy(), 0), ("b", np.zeros(8, np.float32), 0), ("c", c, 1)],
                         make_tiling((1 if synced else 0,)), workspace_bytes=(16 << 20) + 4096)
    finally:
        lib.lib.evk_twin_set_auto_sync(1)
    return result, c


def expected_rule(path) -> str:
    return re.search(r"^// hazard: (\S+)", path.read_text(), re.M).group(1)


@pytest.mark.parametrize("path", HAZARDS, ids=[p.stem for p in HAZARDS])
def test_hazard_is_refused_with_its_rule_and_line(hazards, path):
    result, _ = run(hazards, path.stem, synced=False, auto_sync=path.stem not in NEEDS_NO_AUTO_SYNC)
    assert result.rc == 1, f"{path.stem}: the hazard ran clean"
    parts = result.fault_parts()
    assert parts["rule"] == expected_rule(path), result.fault
    assert int(parts["line"]) == marked_line(path, "// HAZARD"), result.fault


@pytest.mark.parametrize("auto_sync", [True, False], ids=["auto-sync", "no-auto-sync"])
@pytest.mark.parametrize("path", HAZARDS, ids=[p.stem for p in HAZARDS])
def test_synchronised_form_is_accepted_and_correct(hazards, path, auto_sync):
    result, c = run(hazards, path.stem, synced=True, auto_sync=auto_sync)
    assert result.rc == 0, result.fault
    where, want = EXPECTED[path.stem]
    np.testing.assert_array_equal(c[where], want)


@pytest.mark.parametrize("name", sorted(NEEDS_NO_AUTO_SYNC))
def test_scalar_hazards_are_synchronised_by_the_compiler_by_default(hazards, name):
    # CANN's kernel launch and custom operator projects build with --cce-auto-sync: the compiler
    # inserts the flags between PIPE_S and V/MTE2/MTE3, so the unsynchronised form is correct there
    result, c = run(hazards, name, synced=False, auto_sync=True)
    assert result.rc == 0, result.fault
    where, want = EXPECTED[name]
    np.testing.assert_array_equal(c[where], want)


def test_every_rule_of_the_check_has_a_hazard():
    assert {expected_rule(p) for p in HAZARDS} >= {"pipe-race", "uninit-read", "sync-unpaired", "block-race",
                                                   "stale-cache", "block-overlap", "sync-double-set", "sync-order"}


def test_feedback_is_one_actionable_line(hazards):
    result, _ = run(hazards, "tbuf_copy_in_to_vector", synced=False)
    assert "\n" not in result.fault
    path = KERNELS / "hazards" / "tbuf_copy_in_to_vector.cpp"
    copy_in = marked_line(path, "DataCopy(x, aGm, 1024);")
    assert (f"add SetFlag<HardEvent::MTE2_V>(id) after line {copy_in} and WaitFlag<HardEvent::MTE2_V>(id) before "
            f"line {marked_line(path, '// HAZARD')}") in result.fault, result.fault
    result, _ = run(hazards, "copy_outs_overlap", synced=False)
    assert "add PipeBarrier<PIPE_MTE3>()" in result.fault
    result, _ = run(hazards, "gather_in_first_block", synced=False)
    assert "block 1 writes" in result.fault and "that block 0 read at line" in result.fault
    result, _ = run(hazards, "flag_never_waited", synced=False)
    assert "WaitFlag<HardEvent::MTE3_MTE2>(1)" in result.fault


def test_a_flag_is_one_bit(hazards):
    # issue 66: the second SetFlag of a flag still set is lost on a device (the twin counted sets)
    result, _ = run(hazards, "flag_set_twice", synced=False)
    path = KERNELS / "hazards" / "flag_set_twice.cpp"
    first = marked_line(path, "SetFlag<HardEvent::MTE2_V>(EVENT_ID0);")
    assert result.fault_parts()["rule"] == "sync-double-set"
    assert f"SetFlag<HardEvent::MTE2_V>(0) while the same flag, set at line {first}, has not been waited for" \
        in result.fault, result.fault
    assert "\n" not in result.fault and "another event id" in result.fault


def test_a_wait_before_its_set_holds_only_its_own_pipe(hazards):
    # legal as documented (n[0] = 1, accepted and correct in the suite above); what the twin
    # refuses is the held pipe's instruction issued before the set, and a wait on PIPE_S
    result, _ = run(hazards, "wait_before_set_held", synced=False)
    path = KERNELS / "hazards" / "wait_before_set_held.cpp"
    wait = marked_line(path, "WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);  // before the copy")
    assert f"comes after WaitFlag<HardEvent::MTE2_V>(0) at line {wait}, whose SetFlag the kernel has not issued yet" \
        in result.fault, result.fault
    result, _ = run(hazards, "wait_on_scalar_before_set", synced=False)
    assert "a wait on PIPE_S stalls the scalar unit" in result.fault, result.fault
    result, _ = run(hazards, "wait_then_barrier_all", synced=False)
    assert "PipeBarrier<PIPE_ALL> waits for every pipe, and PIPE_V is held by WaitFlag" in result.fault, result.fault


def test_a_race_decided_by_the_auto_sync_setting_says_so(hazards):
    result, _ = run(hazards, "scalar_set_then_copy_out", synced=False, auto_sync=False)
    assert result.fault_parts()["rule"] == "pipe-race"
    assert "checked as built with --cce-auto-sync=off, the setting harness.npu_twin.auto_sync: false" in result.fault
    result, _ = run(hazards, "tbuf_copy_in_to_vector", synced=False, auto_sync=False)
    assert "cce-auto-sync" not in result.fault  # MTE2 -> V is never the compiler's flag
