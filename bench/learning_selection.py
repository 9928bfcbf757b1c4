"""Which operators the learning benchmark runs: the pool of families, and the hardest of
them after the selection pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from launch.campaign import CampaignError, select_tasks

# Operators the cold local model mostly fails (activations are too easy for it), by family.
POOL = {
    "reduction": ["14_SumOverDim", "15_MeanOverDim", "16_MaxOverDim", "17_ArgmaxOverDim"],
    "softmax": ["18_Softmax", "19_LogSoftmax"],
    "norm": ["20_LayerNorm", "21_RMSNorm", "22_BatchNormEval", "23_L2Normalize"],
    "matmul": ["24_SquareMatmul", "25_RectMatmul", "26_BatchedMatmul", "27_MatVec", "28_MatmulTransposedA",
               "29_MatmulScaled"],
    "pooling": ["30_MaxPool1d", "31_MaxPool2d", "32_AvgPool1d", "33_AvgPool2d"],
    "scan": ["37_Cumsum", "38_Cumprod", "39_ReverseCumsum"],
    "level2": ["level2/*"],
}


def resolve(suite: Path, globs: list[str]) -> list[Path]:
    """Task files matching any of the globs, deduplicated, in the suite's natural order."""
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
    return next((name for name, stems in POOL.items() if path.stem in stems), "other")


def hardest(pool: list[Path], rows: dict[str, Any], n: int) -> list[Path]:
    """The n pool operators with the lowest feasibility, families taking turns among ties,
    with at least one level-1 and a third level-2 operators where the pool has them
    (the transfer arm needs both)."""
    rank_in_family: dict[str, int] = {}
    keyed = []
    pool = [p for p in pool if not (p.stem in rows and (rows[p.stem].error or "").startswith("task load"))]
    for path in pool:
        row = rows.get(path.stem)
        rate = (row.attempts - sum(row.failures.values())) / row.attempts if row and row.attempts else 0.0
        fam = family(path)
        rank_in_family[fam] = rank_in_family.get(fam, 0) + 1
        keyed.append(((rate, rank_in_family[fam]), path))
    ordered = [path for _, path in sorted(keyed, key=lambda k: k[0])]
    chosen = ordered[:n]
    for level, minimum in ((2, max(1, n // 3)), (1, 1)):
        spare = [p for p in ordered[n:] if level_of(p) == level]
        while sum(level_of(p) == level for p in chosen) < minimum and spare and len(chosen) > 1:
            victim = next(p for p in reversed(chosen) if level_of(p) != level)
            chosen[chosen.index(victim)] = spare.pop(0)
    return chosen
