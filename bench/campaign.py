"""Benchmark: orchestration overhead of the concurrent campaign on a two-node local Ray cluster.

64 operators (copies of four elementwise suite tasks) run against a loopback OpenAI server
that answers every request after a fixed delay with a correct kernel-format C candidate,
so verification and profiling are real (g++, the sandbox, timing) but fast. The ideal wall
time is what the LLM alone would cost at the campaign's concurrency:
delay x iterations x operators / max_in_flight. Prints one JSON line.

    python -m bench.campaign --operators 64 --delay 2 --iterations 2 --in-flight 8
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))

from tests.actors.openai_server import OpenAITestServer  # noqa: E402 - reuse the scripted HTTP LLM
from tests.launch.kernel_agent import SUITE_TASKS, ElementwiseAgent  # noqa: E402
from tests.launch.local_ports import head_node_args  # noqa: E402


def build_suite(folder: Path, operators: int) -> list[Path]:
    """`operators` task files, copies of the elementwise tasks, each with its own id."""
    source = REPOSITORY / "suites" / "cpu" / "level1"
    paths = []
    for i in range(operators):
        task = SUITE_TASKS[i % len(SUITE_TASKS)]
        name = task.split("_", 1)[1]
        path = folder / f"{100 + i}_{name}.py"
        shutil.copyfile(source / f"{task}.py", path)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operators", type=int, default=64)
    parser.add_argument("--delay", type=float, default=2.0, help="seconds the LLM server waits before answering")
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--in-flight", type=int, default=8, help="ray.max_in_flight")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--npus-per-node", type=int, default=2, help="fake NPUs declared per node")
    parser.add_argument("--cpus-per-node", type=int, default=1)
    args = parser.parse_args(argv)

    import ray
    from ray.cluster_utils import Cluster

    from launch.config import load_settings
    from launch.logging import configure_logging
    from launch.ray_campaign.concurrent_campaign import ConcurrentCampaign, ProgressDisplay
    from npu_pool.devices import FakeDevices

    configure_logging(True, "warning")
    work = Path(tempfile.mkdtemp(prefix="evokernel-bench-campaign-"))
    (work / "suite").mkdir()
    tasks = build_suite(work / "suite", args.operators)
    cluster = Cluster(initialize_head=True, head_node_args=head_node_args(
        num_cpus=args.cpus_per_node, resources={"NPU": args.npus_per_node}))
    for _ in range(args.nodes - 1):
        cluster.add_node(num_cpus=args.cpus_per_node, resources={"NPU": args.npus_per_node})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, namespace="evokernel-bench", log_to_driver=False)
    agent = ElementwiseAgent(delay_s=args.delay)
    try:
        with OpenAITestServer() as server:
            server.responder = agent
            settings = load_settings(None, {
                "llm": {"base_url": server.base_url, "model": server.model, "candidate_format": "kernel",
                        "timeout_s": 60 + args.delay},
                "memory": {"uri": str(work / "bank"), "actor_name": "evokernel-memory-bench"},
                "episode": {"iterations": args.iterations, "lessons": False, "review_flagged": False},
                "harness": {"backend": "cpu", "compile_baseline": False, "timed_trials": 5, "warmup_trials": 1,
                            "correctness_trials": 2, "profile_input_sets": 1,
                            "build_cache_dir": str(work / "build")},
                "ray": {"max_in_flight": args.in_flight, "namespace": "evokernel-bench"},
            })
            campaign = ConcurrentCampaign(settings, work / "run", progress=ProgressDisplay(interval_s=30),
                                          fake=FakeDevices(kind="npu", count=args.npus_per_node))
            started = time.perf_counter()
            summary = campaign.run(tasks)
            wall = time.perf_counter() - started
            llm_peak = server.max_in_flight
    finally:
        ray.shutdown()
        cluster.shutdown()
    attempts = [json.loads(line) for line in (work / "run" / "attempts.jsonl").read_text().splitlines()]
    ideal = args.delay * args.iterations * args.operators / args.in_flight
    devices = summary["placement"]["devices"]
    episodes_s = summary["timings"].get("episodes_s") or wall
    # Seconds the devices were held by candidates, per device: the campaign cannot be faster than
    # this (evaluation capacity) nor than the LLM ideal; what is above both is orchestration.
    evaluation_bound = sum(d["busy_s"] for d in devices) / max(1, len(devices))
    first = min(a["timestamp"] for a in attempts) if attempts else None
    print(json.dumps({
        "bench": "campaign", "operators": args.operators, "iterations": args.iterations, "delay_s": args.delay,
        "max_in_flight": args.in_flight, "nodes": args.nodes, "devices": len(summary["placement"]["devices"]),
        "wall_s": round(wall, 1), "ideal_s": round(ideal, 1), "overhead_ratio": round(wall / ideal, 2),
        "startup_s": summary["timings"].get("startup_s"), "episodes_s": summary["timings"].get("episodes_s"),
        "episodes_ratio": round(episodes_s / ideal, 2),
        "device_busy_s_mean": round(evaluation_bound, 1),
        "device_utilisation": round(evaluation_bound / episodes_s, 3),
        "overhead_vs_bound": round(episodes_s / max(ideal, evaluation_bound), 3),
        # issue 28's measure: the whole wall time (start-up included) against max(LLM-only, evaluation-only)
        "llm_only_s": round(ideal, 1), "evaluation_only_s": round(evaluation_bound, 1),
        "wall_vs_bound": round(wall / max(ideal, evaluation_bound), 3), "loadavg": [round(x, 2) for x in os.getloadavg()],
        "feasible": summary["totals"]["feasible"], "attempts": len(attempts),
        "llm_requests": sum(agent.counts.values()), "llm_peak_in_flight": llm_peak,
        "attempt_wall_s_median": round(statistics.median(a["wall_s"] for a in attempts), 2) if attempts else None,
        "episode_nodes": len(set(summary["placement"]["episodes"].values())),
        "evaluations_per_device": [d["evaluations"] for d in devices],
        "first_attempt_at": first, "errors": summary["totals"]["errors"],
    }))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
