"""The twin's modelled cost: counted work, honestly labelled, moving the way the Ascend C
performance guide says (double buffering overlaps copies with compute; more cores help until
the SoC's AI cores are used up)."""

from __future__ import annotations

import numpy as np

from tests.npu_pool.backends.ascendc_twin.twin_support import make_tiling

N = 16 * 8192


def add(lib, blocks, buffers, tile=1024, soc="Ascend910B1"):
    a, b, c = np.ones(N, np.float32), np.ones(N, np.float32), np.zeros(N, np.float32)
    run = lib.run("add_tiled", blocks, [("a", a, 0), ("b", b, 0), ("c", c, 1)], make_tiling((N, tile, buffers)), soc=soc)
    assert run.rc == 0, run.fault
    return run.profile


def test_profile_is_labelled_modelled_and_counts_work(fidelity):
    p = add(fidelity, 8, 2)
    assert p["modelled"] is True and "not a time measured on an NPU" in p["note"]
    assert p["bytes"]["GM->UB"] == 2 * N * 4 and p["bytes"]["UB->GM"] == N * 4
    assert p["vector_repeats"]["arith"] == N * 4 // 256
    assert p["copy_instructions"]["GM->UB"] == 2 * N // 1024
    assert p["soc"]["name"] == "Ascend910B1" and p["soc"]["ub_bytes"] == 192 * 1024 and p["ai_cores"] == 24


def test_double_buffering_beats_single_buffering(fidelity):
    single, double = add(fidelity, 8, 1), add(fidelity, 8, 2)
    assert double["double_buffered_blocks"] == 8 and single["double_buffered_blocks"] == 0
    assert double["time_us"]["overlap_credit"] > 0 and single["time_us"]["overlap_credit"] == 0
    assert double["modelled_us"] < single["modelled_us"]
    # same work counted either way
    assert double["bytes"] == single["bytes"] and double["vector_repeats"] == single["vector_repeats"]


def test_blocks_spread_over_ai_cores(fidelity):
    one, eight, sixteen = add(fidelity, 1, 2), add(fidelity, 8, 2), add(fidelity, 16, 2)
    assert one["modelled_us"] > eight["modelled_us"] > sixteen["modelled_us"]
    # beyond the SoC's cores, blocks queue up in waves
    assert add(fidelity, 16, 2, soc="Ascend310P")["waves"] == 2


def test_tiny_tiles_pay_for_instruction_overheads(fidelity):
    assert add(fidelity, 8, 2, tile=64)["modelled_us"] > add(fidelity, 8, 2, tile=2048)["modelled_us"]
