"""The gates on KernelBench ModelNew candidates (load_inline C++).

One load_inline build in the default run, cached by source hash under
~/.cache/evokernel/test-build, so a second run compiles nothing; the rest are slow.
"""

from __future__ import annotations

import pytest

from npu_pool.tasks.spec import load_task
from npu_pool.verifier import evaluate, verify

from .harness_support import (
    A3_CANDIDATES,
    SMALL_BYTES,
    SUITE,
    candidate_file,
    harness_config,
    header,
)

GOOD = sorted((A3_CANDIDATES / "good_modelnew").glob("*.py"))
BROKEN = sorted((A3_CANDIDATES / "broken").glob("*_modelnew.py"))
SHARED = A3_CANDIDATES / "good_modelnew" / "9_LeakyReLU.py"


def _task(candidate):
    return load_task(SUITE / header(candidate, "task"), max_bytes=SMALL_BYTES)


@pytest.fixture(scope="module")
def leaky_relu_verdict():
    return verify(_task(SHARED), candidate_file(SHARED), harness_config())


def test_good_modelnew_candidate_is_feasible(leaky_relu_verdict):
    verdict = leaky_relu_verdict
    assert verdict.feasible, f"{verdict.gate}/{verdict.category}: {verdict.reason}\n{verdict.details}"
    assert verdict.sizes == {"batch_size": 128, "dim": 4096}
    assert "trials matched at the second size (batch_size=61, dim=2039)" in verdict.reason  # built once, both sizes


def test_second_evaluation_uses_the_build_cache_and_profiles(leaky_relu_verdict):
    assert leaky_relu_verdict.feasible
    verdict, report = evaluate(_task(SHARED), candidate_file(SHARED), harness_config())
    assert verdict.feasible and verdict.timings["compile_cached"] == 1.0
    assert report is not None and report.trials == 5 and report.median_ms > 0


@pytest.mark.slow
@pytest.mark.parametrize("path", GOOD, ids=[p.name for p in GOOD])
def test_all_good_modelnew_candidates_are_feasible(path):
    verdict = verify(_task(path), candidate_file(path), harness_config())
    assert verdict.feasible, f"{verdict.gate}/{verdict.category}: {verdict.reason}\n{verdict.details}"


@pytest.mark.slow
@pytest.mark.parametrize("path", BROKEN, ids=[p.name for p in BROKEN])
def test_broken_modelnew_candidates_stop_at_their_gate(path):
    verdict = verify(_task(path), candidate_file(path), harness_config())
    assert not verdict.feasible
    assert verdict.gate == header(path, "expect-gate"), f"{verdict.category}: {verdict.reason}\n{verdict.details}"
    if verdict.gate == "compile":
        assert "error" in verdict.details


def _kill_running_workers() -> int:
    """kill -9 every candidate's process group (each keeper the warm servers forked, with its
    runner and compiler processes); how many."""
    import os
    import signal
    from pathlib import Path

    from npu_pool.sandbox import runner as sandbox

    killed = 0
    for server in list(sandbox._servers.values()):
        if server.alive():
            for keeper in Path(f"/proc/{server.proc.pid}/task/{server.proc.pid}/children").read_text().split():
                os.killpg(int(keeper), signal.SIGKILL)
                killed += 1
    return killed


@pytest.mark.slow  # two load_inline builds of one source, the first killed by kill -9
def test_a_build_killed_midway_does_not_block_the_next_build_of_its_source():
    """torch leaves its `lock` in the build folder when a build dies; the next build of that
    source must start over, not sleep on the lock until the compile limit."""
    import shutil
    import threading
    import time
    from pathlib import Path

    from npu_pool.verdict import Candidate

    name = "evk_killed_build_probe"  # this test's own build folders: a cold build every run
    source = SHARED.read_text().replace('name="evk_cand_leaky_relu"', f'name="{name}"')
    assert name in source
    candidate, config, task = Candidate(source=source, format="modelnew"), harness_config(), _task(SHARED)
    extensions = Path(config.build_cache_dir) / "torch_extensions"
    for old in extensions.glob(f"{name}-*"):
        shutil.rmtree(old) if old.is_dir() else old.unlink()
    first: dict = {}
    thread = threading.Thread(target=lambda: first.update(verdict=verify(task, candidate, config)), daemon=True)
    thread.start()
    deadline = time.monotonic() + 300
    while not (locks := list(extensions.glob(f"{name}-*/lock"))) and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert locks, f"the first build never started: {first.get('verdict')}"
    assert _kill_running_workers() >= 1
    thread.join(60)
    assert not first["verdict"].feasible  # killed mid-build
    assert locks[0].exists()  # what a dead build leaves behind
    started = time.monotonic()
    verdict = verify(task, candidate, config)
    assert verdict.feasible, f"{verdict.gate}/{verdict.category}: {verdict.reason}\n{verdict.details}"
    assert verdict.timings["compile_cached"] == 0.0  # built again from scratch
    print(f"the build after the killed one: {time.monotonic() - started:.1f} s, verdict feasible")
    assert not locks[0].exists()
