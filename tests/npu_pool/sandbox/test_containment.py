"""The runtime backstop: what a candidate that got past the static gate can still not do.

These call the sandboxed gates directly (no anti-hack gate), as a candidate that evades the
static rules would reach them: it may write only inside its sandbox folder, nothing it
starts outlives its verdict, a fork bomb is bounded, and nothing it changes in its process
reaches the next candidate.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest

from npu_pool.backends import get_backend
from npu_pool.paths import build_cache_dir
from npu_pool.sandbox.confinement import landlock_abi, network_namespace_available
from npu_pool.sandbox.tree_limits import create as _create_group
from npu_pool.verdict import Candidate
from npu_pool.verifier import sandboxed_gates

from ..harness_support import ROOT, fixture_candidate, fixture_task, harness_config


def tree_support() -> str | None:
    """The kind of cgroup a candidate gets here, or None (the watchdog)."""
    group = _create_group(64, 64)
    if group is None:
        return None
    group.remove()
    return group.kind


needs_landlock = pytest.mark.skipif(landlock_abi() < 1, reason="no Landlock on this kernel")

RELU_LOOP = "for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;"
HEAD = """#include <cstdint>
#include <cstdio>
#include <csignal>
#include <unistd.h>
#include <sys/prctl.h>
extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
"""


@pytest.fixture(scope="module")
def relu_task():
    return fixture_task("huge_relu")


def _run(task, body: str, **config):
    source = HEAD + body + "\n    " + RELU_LOOP + "\n}\n"
    config = harness_config(**({"run_timeout_s": 20.0} | config))
    return sandboxed_gates(task, Candidate(source=source, format="kernel"), config, get_backend("cpu"), False)[0]


def _processes_named(name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == name:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _wait_until_gone(name: str) -> None:
    """Gives the kernel time to reap what the sandbox killed. Liveness only: it returns as soon
    as none is left; the 60 s only keeps a leak from hanging the test, it claims no speed."""
    deadline = time.monotonic() + 60
    while _processes_named(name) and time.monotonic() < deadline:
        time.sleep(0.1)


NAMES_ITS_THREAD = """#include <cstdint>
#include <cstdio>
#include <dirent.h>
extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    bool named = false;  // a thread of its own renamed as the CUDA driver does at cuInit
    if (DIR* tasks = opendir("/proc/self/task")) {
        while (dirent* entry = readdir(tasks)) {
            if (entry->d_name[0] == '.') continue;
            char path[96];
            snprintf(path, sizeof path, "/proc/self/task/%s/comm", entry->d_name);
            if (FILE* f = fopen(path, "w")) { named = fputs("evk-kernel", f) >= 0; fclose(f); }
            break;
        }
        closedir(tasks);
    }
    for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = !named ? -1.0f : x[i] > 0.0f ? x[i] : 0.0f;
}
"""


@needs_landlock
def test_a_candidate_may_rename_its_own_threads(relu_task):
    """The CUDA driver's cuInit writes beneath /proc/self/task and fails (304) where it may not,
    so the runner's own thread folders stay writable after the seal (nothing else in /proc)."""
    config = harness_config(run_timeout_s=20.0)
    verdict = sandboxed_gates(relu_task, Candidate(source=NAMES_ITS_THREAD, format="kernel"), config,
                              get_backend("cpu"), False)[0]
    assert verdict.feasible, verdict.details
    assert [p for p in verdict.sandbox["applied"]["writable_after_build"] if p.startswith("/proc/")] == [
        p for p in verdict.sandbox["applied"]["writable"] if p.startswith("/proc/")]


@needs_landlock
def test_writes_outside_the_sandbox_folder_fail(relu_task, tmp_path):
    tag = secrets.token_hex(4)
    targets = [Path.home() / f".evokernel-probe-{tag}", tmp_path / f"probe-{tag}", ROOT / f".probe-{tag}",
               build_cache_dir(harness_config().build_cache_dir) / f"probe-{tag}"]
    opens = "\n".join(f'    if (FILE* f = fopen("{t}", "a")) {{ fputs("escaped", f); fclose(f); }}' for t in targets)
    try:
        verdict = _run(relu_task, opens)
        assert verdict.feasible, verdict.details  # its fopen()s simply fail; the kernel is still right
        assert [t for t in targets if t.exists()] == []
        assert verdict.sandbox["filesystem"].startswith("landlock")
        assert verdict.sandbox["applied"]["writable_after_build"] and "tcp" in verdict.sandbox["applied"]
    finally:
        for target in targets:
            target.unlink(missing_ok=True)


def test_a_daemon_does_not_outlive_its_verdict(relu_task):
    name = f"evkd{secrets.token_hex(5)}"  # comm names are at most 15 characters
    body = f"""    static bool started = false;
    if (!started) {{
        started = true;
        if (fork() == 0) {{ setsid(); if (fork() == 0) {{ prctl(PR_SET_NAME, "{name}"); for (;;) sleep(1); }} _exit(0); }}
    }}"""
    verdict = _run(relu_task, body)
    assert verdict.feasible, verdict.details
    _wait_until_gone(name)
    assert _processes_named(name) == []
    expected = "pid namespace" if network_namespace_available() else "subreaper"
    assert verdict.sandbox["processes"] == expected


# A fork tree with its own bound: 2**7 = 128 processes at most, each asleep (no CPU burnt), far
# below anything this shared machine would feel; the harness's limit in these tests is lower
# still, so the harness is what stops it. Never an unbounded `for (;;) fork();` here.
FORK_TREE = """    static bool started = false;
    if (!started) {{
        started = true;
        const pid_t runner = getpid();
        prctl(PR_SET_NAME, "{name}");
        for (int level = 0; level < 7; ++level) fork();
        if (getpid() != runner) {{ sleep(30); _exit(0); }}
        sleep(5);  // the runner waits: the bound, not its return, ends the run
    }}"""
PROCESS_LIMIT = 48


def _tree_verdict(relu_task, name: str, **config):
    verdict = _run(relu_task, FORK_TREE.format(name=name), process_limit=PROCESS_LIMIT, run_timeout_s=60.0,
                   call_time_limit_min_s=60.0, **config)
    _wait_until_gone(name)
    assert _processes_named(name) == []
    return verdict


def test_a_fork_tree_is_stopped_at_the_process_limit_of_the_whole_tree(relu_task):
    started = time.monotonic()
    verdict = _tree_verdict(relu_task, f"evkb{secrets.token_hex(5)}")
    assert (verdict.gate, verdict.category) == ("runtime", "process_limit"), verdict.model_dump_json(indent=1)
    assert f"limit ({PROCESS_LIMIT} tasks" in verdict.reason and verdict.sandbox["wall_limit_hit"] is None
    assert verdict.sandbox["process_limit"] == PROCESS_LIMIT
    assert time.monotonic() - started < 60  # stopped by the bound, not by the 60 s of sleep or the run limit
    print(verdict.sandbox["tree_limits"])


def test_without_a_cgroup_the_watchdog_stops_the_fork_tree(relu_task, monkeypatch):
    from npu_pool.sandbox import tree_limits

    monkeypatch.setattr(tree_limits, "create", lambda *a: None)
    verdict = _tree_verdict(relu_task, f"evkw{secrets.token_hex(5)}")
    assert (verdict.gate, verdict.category) == ("runtime", "process_limit"), verdict.model_dump_json(indent=1)
    assert verdict.sandbox["tree_limits"].startswith("watchdog")


MEMORY_TREE = """    static bool started = false;
    for (int child = 0; child < 12 && !started; ++child) {{
        if (fork() == 0) {{
            prctl(PR_SET_NAME, "{name}");
            char* block = new char[64 << 20];
            for (int64_t i = 0; i < (64 << 20); i += 4096) block[i] = 1;
            sleep(30);
            _exit(0);
        }}
    }}
    if (!started) sleep(3);  // the children allocate meanwhile
    started = true;"""


@pytest.mark.skipif(tree_support() is None, reason="no writable cgroup here: the watchdog's memory sum is the bound")
def test_processes_that_each_stay_under_the_limit_are_stopped_together(relu_task):
    # twelve children of 64 MiB each: every one under the 256 MiB a process may write, 768 MiB together
    name = f"evkm{secrets.token_hex(5)}"
    verdict = _run(relu_task, MEMORY_TREE.format(name=name), memory_limit_mb=256,
                   run_timeout_s=60.0)
    _wait_until_gone(name)
    assert _processes_named(name) == []
    assert (verdict.gate, verdict.category) == ("runtime", "out_of_memory"), verdict.model_dump_json(indent=1)
    assert "memory limit (256 MiB, all its processes together)" in verdict.reason


def test_what_a_candidate_changes_in_its_process_never_reaches_the_next(relu_task):
    # A ModelNew that is right, and on import breaks the harness for whoever runs after it:
    # the comparison always passes, float64 by default, a poisoned environment variable.
    poisoner = Candidate(format="modelnew", source='''
import os
import torch
import npu_pool.gates.correctness as correctness

correctness.compare = lambda *args, **kwargs: None
torch.set_default_dtype(torch.float64)
os.environ["EVOKERNEL_POISONED"] = "1"


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x.clamp(min=0).to(torch.float32)
''')
    config = harness_config()
    first = sandboxed_gates(relu_task, poisoner, config, get_backend("cpu"), False)[0]
    assert first.gate in ("ok", "correctness", "runtime", "compile")  # whatever it earns itself
    wrong = sandboxed_gates(relu_task, fixture_candidate("relu_plus_one.cpp"), config, get_backend("cpu"), False)[0]
    assert (wrong.feasible, wrong.gate) == (False, "correctness"), wrong.model_dump_json(indent=1)
    right = sandboxed_gates(relu_task, fixture_candidate("relu.cpp"), config, get_backend("cpu"), False)[0]
    assert right.feasible, right.details


def test_without_landlock_require_refuses_and_warn_runs_saying_so(monkeypatch, relu_task):
    from npu_pool.sandbox import runner as sandbox
    from npu_pool.sandbox.confinement import SandboxUnavailable, check_confinement

    monkeypatch.setattr(sandbox.confinement, "landlock_abi", lambda: 0)
    with pytest.raises(SandboxUnavailable, match="harness.confinement=warn") as refused:
        check_confinement("require")
    assert "read and write anywhere" in str(refused.value)  # reads cannot be confined either
    with pytest.raises(SandboxUnavailable):
        sandboxed_gates(relu_task, fixture_candidate("relu.cpp"), harness_config(), get_backend("cpu"), False)
    assert check_confinement("warn")["filesystem"] is None
    verdict = sandboxed_gates(relu_task, fixture_candidate("relu.cpp"), harness_config(confinement="warn"),
                              get_backend("cpu"), False)[0]
    assert verdict.feasible and verdict.sandbox["filesystem"].startswith("NOT CONFINED")
    assert verdict.sandbox["reads"].startswith("NOT CONFINED") and "readable_paths" not in verdict.sandbox.get("applied", {})


def test_a_call_counting_modelnew_is_caught_by_its_timed_outputs(relu_task):
    # Correct for every correctness trial, then stale memory while timed (the static gate would
    # stop its torch calls; here it stands for one that computes through its own extension).
    counting = Candidate(format="modelnew", source='''
import torch


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x.clamp(min=0) if self.calls <= 8 else torch.empty_like(x)
''')
    verdict, report = sandboxed_gates(relu_task, counting, harness_config(timed_trials=20), get_backend("cpu"), True)
    assert report is None and (verdict.feasible, verdict.gate) == (False, "correctness"), verdict.model_dump_json()
    assert verdict.category == "changed_under_timing" and "under timing" in verdict.reason


def test_a_dead_warm_server_is_restarted(relu_task):
    import os
    import signal

    from npu_pool.sandbox.runner import warm_server

    config = harness_config()
    assert sandboxed_gates(relu_task, fixture_candidate("relu.cpp"), config, get_backend("cpu"), False)[0].feasible
    server = warm_server("cpu", get_backend("cpu").sandbox_env_allow,
                         config.network_isolation == "auto" and network_namespace_available())
    assert server.alive()
    os.killpg(server.proc.pid, signal.SIGKILL)
    server.proc.wait(timeout=10)
    verdict = sandboxed_gates(relu_task, fixture_candidate("relu.cpp"), config, get_backend("cpu"), False)[0]
    assert verdict.feasible, verdict.details
    assert server.alive()


DRIVER = """
import sys
from npu_pool.backends import get_backend
from npu_pool.verdict import Candidate
from npu_pool.verifier import sandboxed_gates
from tests.npu_pool.harness_support import fixture_task, harness_config

sandboxed_gates(fixture_task("huge_relu"), Candidate(source=sys.argv[1], format="kernel"),
                harness_config(run_timeout_s=600.0, call_time_limit_factor=None, network_isolation=sys.argv[2]),
                get_backend("cpu"), False)
"""


def _descendants(pid: int) -> set[int]:
    found, frontier = set(), [pid]
    while frontier:
        parent = frontier.pop()
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("isolation", ["auto", pytest.param("off", marks=pytest.mark.slow)])
def test_nothing_outlives_a_driver_killed_outright(isolation):
    """kill -9 of the process that started the sandbox (one-process mode): the warm server,
    the candidate's keeper, init and runner, and a daemon the candidate started in a session
    of its own all go; with a PID namespace (`auto` here) and without one (`off`: no network
    namespace, so no user namespace and a subreaper instead). Before the fix (2026-11-25: the
    server only exited; its keepers lived on, reparented to init) this test failed with the
    keeper, init, the runner and the daemon still alive."""
    import os
    import signal
    import subprocess
    import sys

    name = f"evkk{secrets.token_hex(5)}"
    body = f"""    if (fork() == 0) {{ setsid(); prctl(PR_SET_NAME, "{name}d"); for (;;) sleep(1); }}
    prctl(PR_SET_NAME, "{name}");
    volatile int64_t spin = 0;
    while (spin >= 0) spin = spin + 1 - (spin > (1LL << 60) ? spin : 0);"""
    source = HEAD + body + "\n}\n"
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, source, isolation], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240  # the server's start and the kernel's build, on a busy machine
        while not (_processes_named(name) and _processes_named(f"{name}d")) and time.monotonic() < deadline:
            assert driver.poll() is None, "the driver ended before its candidate ran"
            time.sleep(0.2)
        assert _processes_named(name), "the candidate never started spinning"
        sandbox = _descendants(driver.pid) | set(_processes_named(name)) | set(_processes_named(f"{name}d"))
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in sandbox) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [pid for pid in sandbox if _alive(pid)] == []
    finally:
        driver.kill()
        for pid in _processes_named(name) + _processes_named(f"{name}d"):
            os.kill(pid, signal.SIGKILL)
