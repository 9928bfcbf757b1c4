"""How much of a climb's best/first rests on the twin's one assumed scalar cost: `gm_scalar_us`,
0.1 us per GlobalTensor GetValue/SetValue (a round trip to global memory; docs/ascendc_twin.md,
"The modelled cost"). The first rung moves every element that way, so its modelled time is
almost all that term; a device's scalar data cache would make many of those accesses cheaper.

Recomputed from the counts a climb folder already holds (first/<task>.json and each run's
attempts, their `stages`), not by running the twin again: each kernel's scalar global-memory
part on its busiest core (its accesses x 0.1 us over the cores its blocks ran on) is rescaled
to the cost asked for; the rest of its modelled time (copies, vector, launch) and eager's stay.
Then, as bench/climb_table.py does: per operator and seed the best correct kernel (the first
included), per operator the median over seeds, per arm the median over the operators whose
first kernel is scalar and the share within 2x of eager.

    python -m bench.climb sensitivity --out runs/climb-npu-twin [--costs 0.1,0.03,0.01,0.003,0.001]

prints one JSON line; a published climb's raw.tar.xz unpacks to such a folder.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from bench.climb_table import headline_figures

ASSUMED_US = 0.1  # the twin's gm_scalar_us (npu_pool/backends/ascendc_twin/include/twin_runtime.h)


def rescaled_us(stages: dict[str, Any], cost_us: float) -> float:
    """The kernel's modelled time had one scalar global-memory access cost COST_US."""
    cores = max(1, min(int(stages.get("blocks") or 1), int(stages.get("vector_cores") or 1)))
    scalar_gm = float(stages.get("gm_scalar_accesses", 0)) * ASSUMED_US / cores
    return float(stages["modelled_us"]) - scalar_gm * (1.0 - cost_us / ASSUMED_US)


def _kernel_stages(run: Path) -> list[dict[str, Any]]:
    """The stages of every correct refinement of one operator's run (attempts beside its record)."""
    attempts = run.with_name(f"{run.stem}.attempts.jsonl")
    lines = attempts.read_text().splitlines() if attempts.is_file() else []
    return [a["stages"] for a in map(json.loads, lines) if a.get("feasible") and a.get("stages")]


def sensitivity(out: Path, costs: list[float]) -> dict[str, Any]:
    plan = json.loads((out / "plan.json").read_text())
    firsts = {p.stem: json.loads(p.read_text()) for p in (out / "first").glob("*.json")}
    scalar = {t for t, f in firsts.items() if f.get("feasible") and f.get("rung") == "first"}
    rows: dict[str, Any] = {"bench": "climb_sensitivity", "results": str(out), "assumed_gm_scalar_us": ASSUMED_US}
    for arm in plan["arms"]:
        for cost in costs:
            per_operator: dict[str, list[tuple[float, float]]] = {}
            for run in sorted((out / "runs").glob(f"{arm}-s*/*.json")):
                record = json.loads(run.read_text())
                if record["task"] not in scalar:
                    continue
                first = rescaled_us(firsts[record["task"]]["profile"]["stages"], cost)
                best = min([first, *(rescaled_us(s, cost) for s in _kernel_stages(run))])
                per_operator.setdefault(record["task"], []).append((first / best, record["eager_ms"] * 1e3 / best))
            if not per_operator:
                continue
            figures = headline_figures([statistics.median(r[0] for r in runs) for runs in per_operator.values()],
                                       [statistics.median(r[1] for r in runs) for runs in per_operator.values()])
            for name in ("median_best_over_first", "share_within_2x_eager"):
                rows[f"{name}_{arm}@{cost:g}"] = figures[name]
    return rows
