"""Campaign metrics: live counters, the Ray metrics the dashboard shows, and the progress line.

`CampaignCounters` is the campaign's state in numbers (operators done, feasible, best
speedups, attempts by gate, tokens), fed by attempts as they stream in and by operators as
they finish. `RayCampaignMetrics` mirrors it into ray.util.metrics, which every node's
metrics agent exports for Prometheus (`metrics_url()` finds this node's endpoint). Names
carry no operator tag: hundreds of operators would explode the series; the operator lives
in attempts.jsonl and the logs.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from actors.messages import Attempt, EpisodeResult
from launch.run_summary import INTERRUPTED

WALLS_KEPT = 200


class CampaignCounters(BaseModel):
    """What the progress line and the metrics show."""

    planned: int = 0
    running: int = 0
    done: int = 0
    feasible: int = 0
    failed: int = 0
    interrupted: int = Field(0, description="operators stopped by Ctrl-C or SIGTERM: neither done nor failed "
                             "(a resume runs them again)")
    feasible_in_flight: int = Field(0, description="operators still running with a feasible kernel so far "
                                    "(counted feasible when they end)")
    feasible_interrupted: int = Field(0, description="interrupted operators that had a feasible kernel (the "
                                      "final table counts them feasible, 'interrupted')")
    attempts: int = 0
    attempts_by_gate: dict[str, int] = Field(default_factory=dict)
    tokens_prompt: int = 0
    tokens_completion: int = 0
    llm_errors: int = 0
    speedups: dict[str, float] = Field(default_factory=dict, description="best speedup over eager per feasible operator")
    walls: list[float] = Field(default_factory=list, description="wall time of the latest attempts (at most "
                               "WALLS_KEPT): the run's end estimate (launch/budget.py)")

    def add_attempt(self, attempt: Attempt) -> None:
        self.attempts += 1
        counts = Counter(self.attempts_by_gate)
        counts[attempt.gate] += 1
        self.attempts_by_gate = dict(counts)
        self.tokens_prompt += attempt.tokens_prompt
        self.tokens_completion += attempt.tokens_completion
        if attempt.gate not in ("llm", "infra"):
            self.walls = [*self.walls[-(WALLS_KEPT - 1):], attempt.wall_s]
        if attempt.gate == "llm":
            self.llm_errors += 1

    def add_result(self, result: EpisodeResult) -> None:
        if result.stopped_by == INTERRUPTED:  # its figures so far are discarded when the run resumes
            self.interrupted += 1
            self.feasible_interrupted += int(result.feasible)
            return
        self.done += 1
        if result.feasible:
            self.feasible += 1
            if result.speedup_vs_eager:
                self.speedups[result.task] = result.speedup_vs_eager
        if result.error and not result.feasible:  # one with a kernel is feasible, whatever stopped it after
            self.failed += 1

    @property
    def tokens(self) -> int:
        return self.tokens_prompt + self.tokens_completion

    def best(self, k: int = 3) -> list[tuple[str, float]]:
        return sorted(self.speedups.items(), key=lambda kv: -kv[1])[:k]

    def line(self) -> str:
        """One status line: `12/64 done (8 running) | 10 feasible (+2 in flight), 1 failed | best ... |
        48 attempts, 123k tok` (`(0 running, 2 interrupted)` once a stop cut operators short)."""
        best = ", ".join(f"{task} {s:.2f}x" for task, s in self.best())
        median = f" median {statistics.median(self.speedups.values()):.2f}x;" if self.speedups else ""
        cut = f", {self.interrupted} interrupted" if self.interrupted else ""
        # Running operators that already have a kernel are shown apart: a stop keeps their kernels
        # (the final table counts them feasible, "interrupted"), so "0 feasible" would undersell them.
        # The same for operators a stop cut short with a kernel: the last line agrees with the table.
        apart = [f"+{n} {where}" for n, where in ((self.feasible_in_flight, "in flight"),
                                                   (self.feasible_interrupted, "interrupted")) if n]
        flying = f" ({', '.join(apart)})" if apart else ""
        return (f"{self.done}/{self.planned} done ({self.running} running{cut}) | {self.feasible} feasible{flying}, "
                f"{self.failed} failed | speedup{median} best {best or '-'} | {self.attempts} attempts, "
                f"{_short(self.tokens)} tok")


def _short(n: int) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e3 else str(n)


class RayCampaignMetrics:
    """The campaign's ray.util.metrics (Prometheus names evokernel_*), tagged by run id."""

    def __init__(self, run_id: str):
        from ray.util import metrics

        self.tags = {"run": run_id}
        self.attempts = metrics.Counter("evokernel_attempts", "attempts by stage and verdict gate",
                                        tag_keys=("run", "stage", "gate"))
        self.tokens = metrics.Counter("evokernel_llm_tokens", "LLM tokens spent", tag_keys=("run", "kind"))
        self.llm_errors = metrics.Counter("evokernel_llm_errors", "LLM requests failed after their retries",
                                          tag_keys=("run",))
        self.in_flight = metrics.Gauge("evokernel_episodes_in_flight", "episodes running", tag_keys=("run",))
        self.operators = metrics.Gauge("evokernel_operators", "operators by state", tag_keys=("run", "state"))
        self.best_speedup = metrics.Gauge("evokernel_best_speedup", "speedup over eager of the best kernels",
                                          tag_keys=("run", "stat"))

    def on_attempt(self, attempt: Attempt) -> None:
        self.attempts.inc(tags={**self.tags, "stage": attempt.stage, "gate": attempt.gate or "none"})
        for kind, n in (("prompt", attempt.tokens_prompt), ("completion", attempt.tokens_completion)):
            if n:
                self.tokens.inc(n, tags={**self.tags, "kind": kind})
        if attempt.gate == "llm":
            self.llm_errors.inc(tags=self.tags)

    def add_attempts(self, by_stage_gate: Mapping[tuple[str, str], int], tokens_prompt: int,
                     tokens_completion: int, llm_errors: int) -> None:
        """Attempts recorded before this process started (a resumed run, a restarted recorder),
        in bulk: counts by (stage, gate), tokens by kind and failed LLM requests."""
        for (stage, gate), n in by_stage_gate.items():
            if n:
                self.attempts.inc(n, tags={**self.tags, "stage": stage, "gate": gate})
        for kind, n in (("prompt", tokens_prompt), ("completion", tokens_completion)):
            if n:
                self.tokens.inc(n, tags={**self.tags, "kind": kind})
        if llm_errors:
            self.llm_errors.inc(llm_errors, tags=self.tags)

    def on_counters(self, counters: CampaignCounters) -> None:
        self.in_flight.set(counters.running, tags=self.tags)
        for state, value in (("planned", counters.planned), ("done", counters.done), ("running", counters.running),
                             ("feasible", counters.feasible), ("failed", counters.failed),
                             ("interrupted", counters.interrupted)):
            self.operators.set(value, tags={**self.tags, "state": state})
        if counters.speedups:
            values = list(counters.speedups.values())
            self.best_speedup.set(max(values), tags={**self.tags, "stat": "max"})
            self.best_speedup.set(statistics.median(values), tags={**self.tags, "stat": "median"})


def metrics_url(node_id: str | None = None) -> str | None:
    """The Prometheus endpoint of a node's metrics agent (this node by default), over loopback
    when the node is this machine; None when the node exports no metrics (no ray[default])."""
    import ray

    node_id = node_id or ray.get_runtime_context().get_node_id()
    for node in ray.nodes():
        if node["NodeID"] == node_id and node.get("MetricsExportPort"):
            return f"http://127.0.0.1:{node['MetricsExportPort']}/metrics"
    return None


def parse_prometheus(text: str, prefix: str = "") -> dict[str, list[tuple[dict[str, str], float]]]:
    """{metric name: [(labels, value), ...]} from Prometheus text, for names starting with `prefix`."""
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, labels = head.partition("{")
        if not name.startswith(prefix):
            continue
        pairs: dict[str, Any] = {}
        for part in labels.rstrip("}").split(","):
            key, sep, raw = part.partition("=")
            if sep:
                pairs[key.strip()] = raw.strip().strip('"')
        try:
            found.setdefault(name, []).append((pairs, float(value)))
        except ValueError:
            continue
    return found
