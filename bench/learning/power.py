"""Simulated power of the learning benchmark's evaluation design (docs/learning_benchmark.md).

The world simulated: a candidate operator's cold pass@1 p is uniform on [0, 1]; screening gives
it `screen_drafts` cold drafts and keeps it when its successes fall in the band (the cpu rule:
1 to screen_drafts - 1; the npu-twin rule: 0 to screen_drafts - 1). The baseline arm drafts at
p, the treated arm at p + d clipped to [0, 1], d drawn per operator from Normal(effect, spread)
(memory helps some operators more than others). Each arm gets k fresh drafts of each of the
n held-out operators; the test is the benchmark's own: the exact two-sided Wilcoxon signed-rank
test over the per-operator pass@1 differences (zeros dropped), a success being p < alpha with
the treated arm ahead. Power is the share of simulated benchmarks that succeed.

    python -m bench.learning.power                    # the table in docs/learning_benchmark.md
    python -m bench.learning.power --operators 20 --drafts 6 --effect 0.15 --sims 4000

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import random
import sys

from bench.learning.stats import wilcoxon_signed_rank

ALPHA = 0.05


def screened_rate(rng: random.Random, screen_drafts: int, floor_admitted: bool) -> float:
    """A cold rate p drawn from the uniform prior, conditioned on screening keeping it."""
    low = 0 if floor_admitted else 1
    while True:
        p = rng.random()
        successes = sum(rng.random() < p for _ in range(screen_drafts))
        if low <= successes <= screen_drafts - 1:
            return p


def one_benchmark(rng: random.Random, operators: int, drafts: int, effect: float, spread: float,
                  screen_drafts: int, floor_admitted: bool, alpha: float = ALPHA) -> bool:
    """Whether one simulated evaluation pass finds the treated arm better at p < alpha."""
    differences = []
    for _ in range(operators):
        p = screened_rate(rng, screen_drafts, floor_admitted)
        treated = min(1.0, max(0.0, p + rng.gauss(effect, spread)))
        wins_t = sum(rng.random() < treated for _ in range(drafts))
        wins_b = sum(rng.random() < p for _ in range(drafts))
        differences.append((wins_t - wins_b) / drafts)
    return sum(differences) > 0 and wilcoxon_signed_rank(differences) < alpha


def power(operators: int, drafts: int, effect: float, *, spread: float = 0.1, screen_drafts: int = 3,
          floor_admitted: bool = False, sims: int = 2000, seed: int = 0) -> float:
    rng = random.Random(f"learning-power/{seed}/{operators}/{drafts}/{effect}/{spread}/{floor_admitted}")
    hits = sum(one_benchmark(rng, operators, drafts, effect, spread, screen_drafts, floor_admitted)
               for _ in range(sims))
    return round(hits / sims, 3)


# (domain, effect, band admits the floor): the two targets
DOMAINS = [("cpu", 0.15, False), ("npu-twin", 0.30, True)]
GRID = [(12, 6), (16, 6), (20, 6), (20, 8), (24, 6), (24, 8), (20, 10)]


def table(sims: int, spread: float, seed: int) -> list[dict]:
    rows = []
    for domain, effect, floor in DOMAINS:
        for operators, drafts in GRID:
            rows.append({"domain": domain, "effect": effect, "operators": operators, "drafts": drafts,
                         "attempts_per_arm": operators * drafts,
                         "power": power(operators, drafts, effect, spread=spread, floor_admitted=floor,
                                        sims=sims, seed=seed),
                         "false_positive_rate": power(operators, drafts, 0.0, spread=0.0, floor_admitted=floor,
                                                      sims=sims, seed=seed)})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.learning.power", description=__doc__.splitlines()[0])
    p.add_argument("--operators", type=int, default=None, help="held-out operators (default: the grid)")
    p.add_argument("--drafts", type=int, default=6, help="fresh drafts per operator and arm")
    p.add_argument("--effect", type=float, default=0.15, help="mean pass@1 lift of the treated arm")
    p.add_argument("--spread", type=float, default=0.1, help="sd of the lift across operators")
    p.add_argument("--floor", action="store_true", help="the band admits 0-of-3 operators (npu-twin rule)")
    p.add_argument("--sims", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.operators is None:
        print(json.dumps({"bench": "learning_power", "sims": args.sims, "spread": args.spread,
                          "rows": table(args.sims, args.spread, args.seed)}))
        return 0
    value = power(args.operators, args.drafts, args.effect, spread=args.spread, floor_admitted=args.floor,
                  sims=args.sims, seed=args.seed)
    print(json.dumps({"bench": "learning_power", "operators": args.operators, "drafts": args.drafts,
                      "effect": args.effect, "spread": args.spread, "floor_admitted": args.floor,
                      "sims": args.sims, "power": value}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
