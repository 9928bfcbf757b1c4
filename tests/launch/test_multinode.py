"""Two Ray nodes on this machine (ray.cluster_utils.Cluster), each declaring two fake NPUs.

One campaign runs on them: the device pools pin one verifier and one profiler per NPU of
each node, episodes spread over both nodes, the memory actor is killed mid-campaign and
comes back with its bank, and the campaign's metrics appear on the metrics export endpoint.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import ray
from ray.cluster_utils import Cluster

from launch.config import load_settings
from launch.logging import configure_logging
from launch.metrics import metrics_url, parse_prometheus
from launch.ray_campaign.concurrent_campaign import ConcurrentCampaign, ProgressDisplay
from launch.ray_campaign.roles import ROLES, Role, device_roles
from npu_pool.config import HarnessConfig
from npu_pool.devices import FakeDevices
from npu_pool.pools import DevicePools
from tests.actors.openai_server import OpenAITestServer
from tests.launch.kernel_agent import SUITE_TASKS, ElementwiseAgent
from tests.launch.local_ports import head_node_args
from tests.launch.ray_campaign.test_roles import actor_classes_by_role

SUITE = Path(__file__).resolve().parents[2] / "suites" / "cpu" / "level1"
NAMESPACE = "evokernel-multinode-test"


@pytest.fixture(autouse=True)
def logs_to_this_tests_stderr():
    """Tests that ran `main()` under capsys leave structlog writing to their closed stream."""
    configure_logging(False, "info")


@pytest.fixture(scope="module")
def two_nodes():
    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args=head_node_args(
        num_cpus=1, resources={"NPU": 2}, _system_config={"metrics_report_interval_ms": 1000}))
    cluster.add_node(num_cpus=1, resources={"NPU": 2})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, namespace=NAMESPACE, log_to_driver=False)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def campaign_settings(server: OpenAITestServer, tmp_path: Path, **extra):
    values = {
        "llm": {"base_url": server.base_url, "model": server.model, "candidate_format": "kernel",
                "timeout_s": 30, "max_retries": 2, "backoff_base_s": 0.1, "backoff_max_s": 0.5},
        "memory": {"uri": str(tmp_path / "bank"), "actor_name": "evokernel-memory-multinode"},
        "episode": {"iterations": 2, "lessons": False},
        "harness": {"backend": "cpu", "compile_baseline": False, "timed_trials": 5, "warmup_trials": 1,
                    "correctness_trials": 2, "profile_input_sets": 1, "build_cache_dir": str(tmp_path / "build")},
        "ray": {"max_in_flight": 4, "namespace": NAMESPACE},
    }
    for section, fields in extra.items():
        values.setdefault(section, {}).update(fields)
    return load_settings(None, values)


def test_pools_pin_one_verifier_and_profiler_per_npu_of_every_node(two_nodes, tmp_path):
    pools = DevicePools(HarnessConfig(backend="auto"), device_roles(), fake=FakeDevices(kind="npu", count=2)).start()
    try:
        node_ids = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
        assert len(node_ids) == 2 and len(pools.verifiers) == 4 == len(pools.profilers)
        for verifier, profiler in zip(pools.verifiers, pools.profilers, strict=True):
            host, device = verifier.name.split("/")[1:]
            # names carry the node (same IP for both nodes here, so a node id prefix) and the device
            assert verifier.node_id.startswith(host) and device == verifier.device == f"npu:{verifier.visible_devices}"
            assert (profiler.node_id, profiler.device) == (verifier.node_id, verifier.device)
        per_node = {node: sorted(v.device for v in pools.verifiers if v.node_id == node) for node in node_ids}
        assert all(devices == ["npu:0", "npu:1"] for devices in per_node.values())
    finally:
        pools.shutdown()


def _scrape_while(running: threading.Event, found: dict) -> None:
    """Every node's metrics agent (both nodes are on this machine: loopback), once a second."""
    urls = [metrics_url(n["NodeID"]) for n in ray.nodes() if n["Alive"]]
    assert all(urls), "a node exports no metrics (is ray[default] installed?)"
    while running.is_set():
        for url in urls:
            try:
                text = urllib.request.urlopen(url, timeout=5).read().decode()
            except OSError:
                continue
            found.update(parse_prometheus(text, "ray_evokernel"))  # Ray prefixes custom metrics with ray_
        time.sleep(1.0)


def _kill_memory_after_first_attempt(run_dir: Path, name: str, killed: list) -> None:
    attempts = run_dir / "attempts.jsonl"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if attempts.exists() and attempts.read_text().strip():
            actor = ray.get_actor(name, namespace=NAMESPACE)
            killed.append(ray.get(actor.pid.remote()))
            ray.kill(actor, no_restart=False)
            return
        time.sleep(0.2)


@pytest.mark.slow  # about 2 minutes on 2 cores, mostly Ray workers starting on two nodes. By default its
# parts run one at a time: two-node pinning (the test above), device actors killed mid-campaign
# (ray_campaign/test_concurrent_campaign.py), the memory actor SIGKILLed mid-stream
# (memory_actor/test_actor.py), the metrics (ray_campaign/test_run_recorder.py); a campaign
# riding out the memory actor's restart is checked here only, in the slow suite.
def test_campaign_uses_both_nodes_survives_a_memory_actor_kill_and_exports_metrics(two_nodes, tmp_path):
    run_dir = tmp_path / "run"
    tasks = [SUITE / f"{task}.py" for task in SUITE_TASKS]
    found: dict = {}
    killed: list = []
    scraping = threading.Event()
    scraping.set()
    with OpenAITestServer() as server:
        server.responder = ElementwiseAgent()
        settings = campaign_settings(server, tmp_path)
        campaign = ConcurrentCampaign(settings, run_dir, fake=FakeDevices(kind="npu", count=2),
                                      progress=ProgressDisplay(interval_s=5))
        threads = [threading.Thread(target=_scrape_while, args=(scraping, found), daemon=True),
                   threading.Thread(target=_kill_memory_after_first_attempt,
                                    args=(run_dir, settings.memory.actor_name, killed), daemon=True)]
        for thread in threads:
            thread.start()
        try:
            summary = campaign.run(tasks)
        finally:
            time.sleep(2.5)  # one more metrics report after the last operator
            scraping.clear()
    # every operator finished, none lost to the memory actor's death
    assert killed, "the memory actor was never killed"
    assert summary["totals"]["operators"] == 4 and summary["totals"]["errors"] == 0
    assert summary["totals"]["feasible"] == 4 and not summary["interrupted"]
    assert sorted(summary["planned"]) == sorted(SUITE_TASKS)
    saved = json.loads((run_dir / "summary.json").read_text())
    assert saved["finished_at"] and len(saved["operators"]) == 4
    attempts = [json.loads(line) for line in (run_dir / "attempts.jsonl").read_text().splitlines()]
    assert len(attempts) == 8 and {a["task"] for a in attempts} == set(SUITE_TASKS)
    # episodes and evaluations ran on both nodes
    nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    assert set(summary["placement"]["episodes"].values()) == nodes
    evaluated_on = {d["node_id"] for d in summary["placement"]["devices"] if d["evaluations"]}
    assert evaluated_on == nodes
    # every actor the campaign started runs the class its role's row in launch/ray_campaign/roles.py names
    started = actor_classes_by_role(NAMESPACE)
    assert set(started) >= {"verifier", "profiler", "drafter", "refiner", "run recorder"}, started
    for role, classes in started.items():
        assert classes == {ROLES[Role(role)].qualified_name.rsplit(".", 1)[1]}, (role, classes)
    # the memory actor came back (new process) with everything stored before and after the kill
    memory = campaign.actors.memory
    assert ray.get(memory.pid.remote()) != killed[0]
    stats = ray.get(memory.stats.remote())
    assert stats.items_by_kind.get("trace") == 8
    # the campaign's metrics reached the node's metrics agent
    assert {"ray_evokernel_attempts_total", "ray_evokernel_llm_tokens_total", "ray_evokernel_operators",
            "ray_evokernel_episodes_in_flight", "ray_evokernel_best_speedup", "ray_evokernel_pool_evaluations_total",
            "ray_evokernel_memory_items", "ray_evokernel_memory_updates_total"} <= set(found), sorted(found)
    done = [v for labels, v in found["ray_evokernel_operators"]
            if labels.get("state") == "done" and labels.get("run") == campaign.run_id]
    assert done and max(done) == 4
