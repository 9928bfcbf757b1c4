"""The machine's own memory limit below the candidate's (issue 55): an OOM kill by the host is
an infrastructure fault, never the candidate's verdict, and start-up says when the host's limit
cannot hold the configured candidate limit.

The "host" here is a real control group made by the test above the candidate's group, with
less memory than the candidate may use: the kernel's OOM killer then stops the candidate at
the host's limit exactly as a container's or a systemd slice's limit would. Its limit is the
cap of these tests: nothing in them can take more than it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from npu_pool.backends import get_backend
from npu_pool.sandbox import host_memory, tree_limits
from npu_pool.verdict import Candidate
from npu_pool.verifier import sandboxed_gates

from ..harness_support import fixture_task, harness_config

# The test's "machine": less than the candidate's limit and what the candidate below touches, more
# than a verifying worker's own footprint, which is charged to its group. That footprint depends on
# the host: below 192 MiB where this was first written (cgroup v2), 223 MiB at its peak on a cgroup
# v1 host (2026-12-07: the forked worker's copied pages), plus what a killed candidate's group still
# held as the next attempt started.
HOST_MB = 384

# Touches 64 MiB blocks up to 512 MiB: past the host's 384 MiB, within its own 2048 MiB.
ALLOCATES_512_MIB = """#include <cstdint>
#include <cstdlib>
#include <cstring>
extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    for (int i = 0; i < 8; ++i) {
        char* p = static_cast<char*>(std::malloc(size_t(64) << 20));
        if (p == nullptr) __builtin_trap();
        std::memset(p, 1, size_t(64) << 20);
    }
    for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
"""


def _host_group(limit_mb: int) -> tuple[str, Path, dict[str, Path]] | None:
    """A group of ours with `limit_mb` of memory, and the cgroups to present as this process's
    so that the candidate's group is made inside it; None where none can be made here."""
    probe = tree_limits.create(64, 64)
    if probe is None:
        return None
    probe.remove()
    own = tree_limits._own_cgroups()
    name = f"evokernel-hosttest-{os.getpid()}"
    if probe.kind == "cgroup v2":
        folder = tree_limits._v2_base() / name
        folder.mkdir()
        (folder / "memory.max").write_text(str(limit_mb * 2**20))
        (folder / "memory.swap.max").write_text("0")
        (folder / "cgroup.subtree_control").write_text("+memory +pids")
        return probe.kind, folder, {**own, "v2": folder}
    folder = own["memory"] / name
    folder.mkdir()
    (folder / "memory.limit_in_bytes").write_text(str(limit_mb * 2**20))
    return probe.kind, folder, {**own, "memory": folder}


@pytest.fixture
def small_host(monkeypatch, request):
    made = _host_group(getattr(request, "param", HOST_MB))
    if made is None:
        pytest.skip("no writable cgroup here: the candidate's tree is bounded by the watchdog, no host limit to model")
    kind, folder, cgroups = made
    monkeypatch.setattr(tree_limits, "_own_cgroups", lambda: cgroups)
    if kind == "cgroup v2":
        monkeypatch.setattr(tree_limits, "_v2_base", lambda: folder)
    yield folder
    for child in folder.glob("evokernel-*"):
        child.rmdir()
    folder.rmdir()


def test_a_candidate_killed_by_the_hosts_limit_is_an_infrastructure_fault(small_host):
    task = fixture_task("huge_relu")
    config = harness_config(memory_limit_mb=2048, run_timeout_s=60.0)
    verdict = sandboxed_gates(task, Candidate(source=ALLOCATES_512_MIB, format="kernel"), config,
                              get_backend("cpu"), False)[0]
    assert (verdict.gate, verdict.category) == ("infra", "host_out_of_memory"), verdict.model_dump_json(indent=1)
    assert f"memory limit ({HOST_MB} MiB" in verdict.reason and "2048 MiB" in verdict.reason
    assert "harness.memory_limit_mb" in verdict.reason and "--max-in-flight" in verdict.reason
    assert "\n" not in verdict.reason


@pytest.mark.parametrize("small_host", [1024], indirect=True)
def test_a_candidate_past_its_own_limit_inside_a_larger_host_is_still_its_own_fault(small_host):
    task = fixture_task("huge_relu")
    config = harness_config(memory_limit_mb=256, run_timeout_s=60.0)
    verdict = sandboxed_gates(task, Candidate(source=ALLOCATES_512_MIB, format="kernel"), config,
                              get_backend("cpu"), False)[0]
    # RLIMIT_DATA (per process) fails its malloc, or its group's limit kills it: its own limit either way
    assert verdict.gate == "runtime" and verdict.category in ("out_of_memory", "crash"), verdict.model_dump_json(indent=1)


def test_start_up_warns_when_the_host_cannot_hold_the_run(small_host):
    """The host's limit is read from the real group above ours; what a run holds besides its
    candidates and the remedy are launch.host_capacity's (tests/launch/test_host_capacity.py)."""
    from launch.host_capacity import RunShape, capacity_warning

    limit, where = host_memory.host_limit_mb()
    assert limit == HOST_MB and str(small_host) in where
    line = capacity_warning(RunShape(ray=True, slots=2, in_flight=2, local_llm=False, memory_mb=8192))
    assert line is not None and f"this machine may hold {HOST_MB} MiB ({where})" in line
    assert "harness.memory_limit_mb=8192" in line and "this machine is too small for a run" in line


def test_an_oom_kill_in_our_own_group_is_counted(small_host, monkeypatch):
    """oom_kills reads the OOM killer's count of our own memory group (here the test's "machine"):
    a real process in it that allocates past the group's limit is killed, and the count moves,
    which is how a Ray worker taken by the machine's limit is told from one Ray lost."""
    import subprocess
    import sys

    leaf = small_host / "evokernel-leaf"  # cgroup v2 keeps processes out of inner groups
    leaf.mkdir()
    try:
        own = tree_limits._own_cgroups()
        key = "v2" if "v2" in own and own["v2"] == small_host else "memory"
        monkeypatch.setattr(tree_limits, "_own_cgroups", lambda: {**own, key: leaf})
        before, folder = host_memory.oom_kills()
        assert folder == str(leaf) and host_memory.oom_kill_line(before) is None
        grow = "b = []\nwhile True: b.append(bytearray(16 << 20))"
        procs = leaf / "cgroup.procs"
        done = subprocess.run([sys.executable, "-c", grow], timeout=120,
                              preexec_fn=lambda: procs.write_text(str(os.getpid())))
        assert done.returncode == -9  # SIGKILL: the OOM killer, at the group's limit
        after, _ = host_memory.oom_kills()
        assert after == before + 1
        line = host_memory.oom_kill_line(before)
        assert line is not None and "OOM killer stopped 1 process(es) of this run" in line and str(leaf) in line
    finally:
        leaf.rmdir()


@pytest.mark.parametrize("small_host", [1024], indirect=True)
def test_evokernel_run_says_so_at_start_up(small_host, tmp_path):
    """A real `evokernel run` started inside the 1 GiB "machine" (it stops at once: no task
    matches), with a candidate limit of 2 GiB: one warning line naming both and what to set."""
    import subprocess
    import sys

    from ..harness_support import ROOT

    leaf = small_host / "evokernel-leaf"  # a leaf: cgroup v2 keeps processes out of inner groups
    leaf.mkdir()
    procs = leaf / "cgroup.procs"
    run = subprocess.run(
        [sys.executable, "-m", "launch.cli", "--set", "harness.memory_limit_mb=2048", "run", "--no-ray",
         "--tasks", "no_such_task_*", "--memory", str(tmp_path / "bank"), "--out", str(tmp_path / "run")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        preexec_fn=lambda: procs.write_text(str(os.getpid())))
    warnings = [line for line in run.stderr.splitlines() if "warning" in line and "memory" in line]
    assert len(warnings) == 1, run.stderr
    assert "1024 MiB" in warnings[0] and "harness.memory_limit_mb=2048" in warnings[0], warnings[0]
