"""Which operators the learning benchmark runs, and in which order.

Operators come in families (the bundle's template families), members listed from the one a
small model is likeliest to solve to the hardest. A first pass (retrieval `none`) measures
which of them the cold model solves; the selection then keeps, per family, its easiest solved
member followed by members it failed (a curriculum: the solved one gives the memory a correct
kernel of the family before the harder ones), families with such a pair first, and a third of
level-2 fused operators at the end (the transfer arm runs them alone, cold). Replicates keep
that shape and shuffle the order of the families, of the hard members and of level 2.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from launch.campaign import CampaignError, select_tasks

# Level-1 families, members from easy to hard (our guess; the first pass decides what counts).
FAMILIES: dict[str, list[str]] = {
    "elementwise": ["4_ReLU", "7_Sigmoid", "9_LeakyReLU", "5_GELU", "10_HardSwish", "11_Softplus"],
    "reduction": ["14_SumOverDim", "15_MeanOverDim", "16_MaxOverDim", "17_ArgmaxOverDim"],
    "softmax_norm": ["18_Softmax", "19_LogSoftmax", "23_L2Normalize", "21_RMSNorm", "20_LayerNorm"],
    "matmul": ["24_SquareMatmul", "25_RectMatmul", "27_MatVec", "29_MatmulScaled", "28_MatmulTransposedA",
               "26_BatchedMatmul"],
    "window": ["32_AvgPool1d", "30_MaxPool1d", "33_AvgPool2d", "31_MaxPool2d", "34_Conv1d"],
    "scan": ["37_Cumsum", "39_ReverseCumsum", "38_Cumprod"],
}
LEVEL2 = ["level2/1_GemmBiasReLU", "level2/2_GemmGELUScale", "level2/10_GemmScaleHardtanh", "level2/13_MLPReLU",
          "level2/4_MatmulSoftmax", "level2/8_Conv2dTanhScaleBias"]
PER_FAMILY = 2  # members a family contributes before the next family gets a turn


def pool_globs() -> list[str]:
    return [stem for members in FAMILIES.values() for stem in members] + LEVEL2


def resolve(suite: Path, globs: list[str]) -> list[Path]:
    """Task files matching any of the globs, deduplicated, in the order of the globs."""
    found: dict[Path, None] = {}
    for pattern in globs:
        for form in (pattern, pattern + ".py"):  # "level2/4_MatmulSoftmax" names a path without .py
            try:
                found.update(dict.fromkeys(select_tasks(suite, form)))
                break
            except CampaignError:
                continue  # a pool entry missing from a custom suite
    return list(found)


def level_of(path: Path) -> int:
    return 2 if "level2" in path.parts else 1


def family(path: Path) -> str:
    if level_of(path) == 2:
        return "level2"
    return next((name for name, stems in FAMILIES.items() if path.stem in stems), "other")


def _rank_in_family(path: Path) -> int:
    members = FAMILIES.get(family(path), [])
    return members.index(path.stem) if path.stem in members else len(members)


def choose(pool: list[Path], rates: dict[str, float], n: int) -> tuple[list[Path], list[str]]:
    """The n operators in curriculum order, and the stems of those the cold model solved.

    `rates` maps a stem to its feasible fraction in the first pass; operators missing from it
    (their task did not load) are left out. A family contributes only if the cold model
    failed one of its members; its easiest solved member, if any, comes first.
    """
    pool = [p for p in pool if p.stem in rates]
    level2 = [p for p in pool if level_of(p) == 2]
    n2 = min(len(level2), max(1, n // 3)) if level2 and any(level_of(p) == 1 for p in pool) else len(level2)
    n2 = min(n2, n)
    units: list[tuple[bool, list[Path]]] = []  # (has a solved member, members in curriculum order)
    groups: dict[str, list[Path]] = {}
    for path in pool:
        if level_of(path) == 1:
            groups.setdefault(family(path), []).append(path)
    for members in groups.values():
        members = sorted(members, key=_rank_in_family)
        solved = sorted((p for p in members if rates[p.stem] > 0), key=lambda p: -rates[p.stem])
        failed = [p for p in members if rates[p.stem] == 0]
        if failed:
            units.append((bool(solved), solved[:1] + failed))
    units.sort(key=lambda unit: not unit[0])  # families with a solved member first (stable)
    taken: list[list[Path]] = [[] for _ in units]
    want, share = n - n2, PER_FAMILY
    while sum(map(len, taken)) < want and any(len(t) < len(u[1]) for t, u in zip(taken, units, strict=True)):
        for t, (_, members) in zip(taken, units, strict=True):
            while len(t) < min(share, len(members)) and sum(map(len, taken)) < want:
                t.append(members[len(t)])
        share += 1
    hard2 = sorted(level2, key=lambda p: rates[p.stem] > 0)  # failed first, pool order otherwise
    chosen = [p for t in taken for p in t] + hard2[: n - sum(map(len, taken))]
    return chosen, [p.stem for p in chosen if rates[p.stem] > 0]


def curriculum(tasks: list[Path]) -> list[Path]:
    """Given operators grouped by family (in order of first appearance, the given order kept
    inside a family), level 2 last."""
    groups: dict[str, list[Path]] = {}
    for path in tasks:
        groups.setdefault(family(path), []).append(path)
    level2 = groups.pop("level2", [])
    return [p for members in groups.values() for p in members] + level2


def replicate_order(tasks: list[Path], replicate: int, seed: int) -> list[Path]:
    """Replicate 0 runs the curriculum as chosen; later ones shuffle the families, the members
    after each family's first (its easy one stays first) and the level-2 operators."""
    if replicate == 0:
        return list(tasks)
    rng = random.Random(f"learning-order/{seed}/{replicate}")
    groups: dict[str, list[Path]] = {}
    for path in tasks:
        groups.setdefault(family(path), []).append(path)
    level2 = groups.pop("level2", [])
    order = list(groups.values())
    rng.shuffle(order)
    shuffled = []
    for members in order:
        rest = members[1:]
        rng.shuffle(rest)
        shuffled += members[:1] + rest
    rng.shuffle(level2)
    return shuffled + level2


def rates_from(rows: dict[str, Any]) -> dict[str, float]:
    """Feasible fraction per operator from the first pass's report rows; operators whose task
    did not load are absent."""
    rates = {}
    for stem, row in rows.items():
        if (row.error or "").startswith("task load"):
            continue
        feasible = row.attempts - sum(row.failures.values())
        rates[stem] = feasible / row.attempts if row.attempts else 0.0
    return rates
