"""Device-pinned pools on a real local Ray cluster with two declared (fake) NPUs.

The actors evaluate real kernel-format candidates with the cpu backend (the NPUs are
fake); what is tested is the pinning, the naming, the scheduling and the fault handling.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import ray

from actors.code_extraction import extract_code
from npu_pool.config import HarnessConfig
from npu_pool.devices import FakeDevices
from npu_pool.pools import DevicePools, Profiler, Verifier
from npu_pool.tasks.spec import load_task
from npu_pool.verdict import Candidate
from tests.actors import replies

RELU = Path(__file__).resolve().parents[2] / "suites" / "cpu" / "level1" / "4_ReLU.py"


def candidate(reply: str) -> Candidate:
    return Candidate(source=extract_code(reply, "kernel").code, format="kernel")


@pytest.fixture(scope="module")
def pools(tmp_path_factory):
    # An instance left by another module (without NPU resources) cannot host the pools.
    if ray.is_initialized() and ray.cluster_resources().get("NPU", 0) < 2:
        ray.shutdown()
    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=2, resources={"NPU": 2}, include_dashboard=False, log_to_driver=False,
                 namespace="evokernel-pools-test")
    config = HarnessConfig(backend="auto", compile_baseline=False, correctness_trials=2, warmup_trials=1,
                           timed_trials=5, profile_input_sets=1,
                           build_cache_dir=str(tmp_path_factory.mktemp("build-cache")))
    built = DevicePools(config, {"verifier": Verifier, "profiler": Profiler}, fake=FakeDevices(kind="npu", count=2)).start()
    yield built
    built.shutdown()
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def relu():
    return load_task(RELU)


def test_one_verifier_and_one_profiler_pinned_per_device(pools):
    assert pools.kind == "npu" and pools.evaluating_backend == "cpu"
    for role, members in (("verifier", pools.verifiers), ("profiler", pools.profilers)):
        assert sorted(m.name for m in members) == [f"{role}/npu:0", f"{role}/npu:1"]
        for member in members:
            # Ray chose the device and told the process through ASCEND_RT_VISIBLE_DEVICES
            assert member.device == member.name.split("/")[-1] == f"npu:{member.visible_devices}"
            assert member.fake and member.backend == "cpu"
            assert ray.get(ray.get_actor(member.name).describe.remote()).pid == member.pid
    # the verifier and the profiler of a device are two processes on the same device
    by_device = {v.device: p for v, p in zip(pools.verifiers, pools.profilers, strict=True)}
    assert all(by_device[v.device].pid != v.pid for v in pools.verifiers)
    assert ray.get_actor("pool/evaluator") is not None


def test_candidates_spread_over_devices_and_timing_never_overlaps_other_work(pools, relu):
    before = {m.name: len(ray.get(ray.get_actor(m.name).history.remote())) for m in pools.verifiers + pools.profilers}
    refs = [pools.pool.evaluate.remote(relu, candidate(r)) for r in (replies.FAST, replies.WRONG, replies.SLOW)]
    fast, wrong, slow = ray.get(refs)
    assert fast.verdict.feasible and fast.profile.median_ms > 0 and fast.device in ("npu:0", "npu:1")
    assert (wrong.verdict.gate, wrong.profile) == ("correctness", None)
    assert slow.verdict.feasible and slow.profile.median_ms > 0  # which is faster depends on the load: not asserted
    assert {fast.device, wrong.device, slow.device} == {"npu:0", "npu:1"}
    stats = ray.get(pools.pool.stats.remote())
    assert sum(m["evaluations"] for m in stats["members"]) >= 3
    # What every device actor ran: the profiler's one child checked and timed each candidate
    # (no separate verify run), holding the node shared while it built and checked, and
    # alone while it timed: a timing window never overlaps another child's hold on the node.
    runs = {m.name: ray.get(ray.get_actor(m.name).history.remote())[before[m.name]:]
            for m in pools.verifiers + pools.profilers}
    assert not any(runs[m.name] for m in pools.verifiers)
    assert sorted(p for m in pools.profilers for p, _, _ in runs[m.name] if p == "profile") == ["profile"] * 3
    holds = [(name, *run) for name, entries in runs.items() for run in entries if run[0].startswith("node-")]
    timed = [h for h in holds if h[1] == "node-exclusive"]
    assert len(timed) == 2  # the two feasible candidates
    for name, _, start, end in timed:
        overlapping = [h for h in holds if h[0] != name and h[2] < end and start < h[3]]
        assert not overlapping, f"{name} timed while {overlapping} held the node"


def test_verification_alone_goes_to_the_verifier(pools, relu):
    before = {m.name: len(ray.get(ray.get_actor(m.name).history.remote())) for m in pools.verifiers}
    assert ray.get(pools.pool.evaluate.remote(relu, candidate(replies.FAST), profile=False)).profile is None
    ran = [p for m in pools.verifiers for p, _, _ in ray.get(ray.get_actor(m.name).history.remote())[before[m.name]:]]
    assert ran.count("verify") == 1


@pytest.mark.slow  # fault injection: a restart costs a process start
def test_a_dead_profiler_is_restarted_and_the_candidate_retried(pools, relu):
    # Correct, and slow enough in every call (a spin) to be killed mid-evaluation.
    spinning = Candidate(format="kernel", source=f"""#include <cstdint>
extern "C" void kernel({replies.SIGNATURE_ARGS}) {{
    volatile double spin = 0.0;
    for (int64_t k = 0; k < 100000000LL; ++k) spin = spin + 1.0;
    for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = x[i] > 0.f ? x[i] : 0.f;
}}
""")
    before = {m.name: m.pid for m in pools.profilers}
    ref = pools.pool.evaluate.remote(relu, spinning)
    time.sleep(1.5)  # the profiler's child is building or checking it by now
    for name in before:
        ray.kill(ray.get_actor(name), no_restart=False)
    done = ray.get(ref, timeout=300)
    assert done.verdict.feasible and done.retried, done.verdict.model_dump_json()
    after = {name: ray.get(ray.get_actor(name).describe.remote()) for name in before}
    for name, info in after.items():
        assert info.pid != before[name] and info.device == name.split("/")[-1]  # same device after restart
