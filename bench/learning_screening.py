"""The learning benchmark v3's pre-registered rules: the screening pool, the band of operators
the cold model solves sometimes, which of them are held out for evaluation, and the learning
pass's curriculum (docs/learning_benchmark.md, "v3: analysis plan"). Pure functions of the
screening outcomes, so that a resumed run chooses exactly what the first start chose.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.learning_selection import FAMILIES, family

# The screening pool, in its pre-registered order: every level-1 member of the families (the v2
# pool) and the near-copies added for v3 (suites/cpu/level1 45-65). Order matters only where a
# rule says "in pool order".
V3_FAMILIES: dict[str, list[str]] = {
    "elementwise": [*FAMILIES["elementwise"], "45_ReLU6", "46_Hardtanh", "47_Softsign", "48_HardSigmoid",
                    "49_Mish", "50_SELU"],
    "reduction": [*FAMILIES["reduction"], "55_MinOverDim", "56_SumOverLastDim", "57_ArgminOverDim",
                  "58_L1NormOverDim"],
    "softmax_norm": list(FAMILIES["softmax_norm"]),
    "matmul": [*FAMILIES["matmul"], "51_VecMat", "52_MatmulTransposedB", "53_MatmulAddBias", "54_TransposedMatVec"],
    "window": [*FAMILIES["window"], "59_MaxPool1dNoPad", "60_AvgPool1dNoPad", "61_MaxPool2dNoPad",
               "62_AvgPool2dSame"],
    "scan": [*FAMILIES["scan"], "63_CumsumDim0", "64_Cummax", "65_ExclusiveCumsum"],
}


# The wide pool (`--wide-pool`): the plan's remedy for a thin band (the cpu run of 2026-11-27
# stopped with 8 band members in the 50): near-copies of the operators the cold model solved
# sometimes (sigmoid/leaky-ReLU/softsign-like activations, reductions over the last or another
# axis, matrix-vector and rectangular products), level-1 tasks 66-92, and the suite's
# activations the v2 families left out. Appended to their families, after the v3 members.
V3_WIDE_ADDITIONS: dict[str, list[str]] = {
    "elementwise": ["6_SiLU", "8_Tanh", "12_ELU", "13_Sqrt", "66_LogSigmoid", "67_Softshrink", "68_Hardshrink",
                    "69_Tanhshrink", "70_Threshold", "71_CELU", "72_PReLU", "73_SquaredReLU", "74_Abs", "75_Sign",
                    "76_Exp"],
    "reduction": ["77_MaxOverLastDim", "78_MinOverLastDim", "79_MeanOverMiddleDim", "80_SumOverFirstDim",
                  "81_ProdOverLastDim", "82_RowSum", "83_RowMean", "84_SumOfSquaresOverLastDim",
                  "85_MeanOverLastDimKeepdim"],
    "matmul": ["86_MatVec1d", "87_MatVecAddBias", "88_MatVecScaled", "89_TallSkinnyMatmul", "90_ShortWideMatmul",
               "91_OuterProduct", "92_BatchedMatVec"],
}


def v3_family(path: Path) -> str:
    for families in (V3_FAMILIES, V3_WIDE_ADDITIONS):
        for name, stems in families.items():
            if path.stem in stems:
                return name
    return family(path)


def pool_globs(wide: bool = False) -> list[str]:
    """The screening pool in its fixed order: family by family, the v3 members first, then (wide)
    the additions."""
    return [stem for name, members in V3_FAMILIES.items()
            for stem in members + (V3_WIDE_ADDITIONS.get(name, []) if wide else [])]


@dataclass(frozen=True)
class Rule:
    """The screening rule of one domain."""

    drafts: int = 3  # cold drafts per pool operator in stage 1
    extra_drafts: int = 3  # stage 2: more drafts for borderline operators when the band is thin
    floor_admitted: bool = False  # npu-twin: 0 successes is in the band (the cold model knows no Ascend C)
    target: int = 20  # held-out operators wanted; fewer triggers stage 2
    minimum: int = 8  # fewer than this after stage 2: the evaluation cannot reach p < 0.05 often; stop
    max_heldout: int = 24
    max_curriculum: int = 12

    def in_band(self, successes: int, drafts: int) -> bool:
        """Solved sometimes: at least once (or, floor admitted, at all) and not every time."""
        return (0 if self.floor_admitted else 1) <= successes <= drafts - 1


def band(outcomes: dict[str, list[bool]], rule: Rule) -> list[str]:
    """Operators (in the order given) whose screening drafts fall in the band."""
    return [stem for stem, drafts in outcomes.items() if drafts and rule.in_band(sum(drafts), len(drafts))]


def stage2(pool: list[Path], outcomes: dict[str, list[bool]], rule: Rule) -> list[Path]:
    """When the band after stage 1 holds fewer than `rule.target` operators: the borderline ones,
    which get `rule.extra_drafts` more cold drafts (pool order). Borderline: outside the band, in
    a family where stage 1 solved something (a 0-of-3 there may be a 1-in-5 operator; a 3-of-3
    may fail sometimes). Empty when the band is big enough."""
    if len(band(outcomes, rule)) >= rule.target:
        return []
    solving = {v3_family(p) for p in pool if any(outcomes.get(p.stem, []))}
    inside = set(band(outcomes, rule))
    return [p for p in pool if p.stem in outcomes and outcomes[p.stem] and p.stem not in inside
            and v3_family(p) in solving]


def _round_robin(groups: list[list[Path]], limit: int) -> tuple[list[Path], list[Path]]:
    """Take one member per group per turn (groups in order, members in order) up to `limit`."""
    taken: list[Path] = []
    depth = 0
    while len(taken) < limit and any(depth < len(g) for g in groups):
        for g in groups:
            if depth < len(g) and len(taken) < limit:
                taken.append(g[depth])
        depth += 1
    return taken, [p for g in groups for p in g if p not in taken]


def split(pool: list[Path], outcomes: dict[str, list[bool]], rule: Rule) -> tuple[list[Path], list[Path]]:
    """(held-out operators, learning curriculum), both decided by the screening outcomes alone.

    Per family (pool order): a family with no operator solved every time and two or more band
    members gives its first band member to the curriculum, so that the learning pass can bank
    a kernel of the family; the other band members are held out, taken one family at a time up
    to `rule.max_heldout` (the rest join the curriculum). The curriculum: per family, families
    with a held-out operator first, the members solved every time (at most 2), band members not
    held out, then members never solved (at most 2); taken one family at a time up to
    `rule.max_curriculum`, then grouped by family, easy first."""
    members: dict[str, list[Path]] = {}
    for path in pool:
        if outcomes.get(path.stem):
            members.setdefault(v3_family(path), []).append(path)
    inside = set(band(outcomes, rule))
    candidates: dict[str, list[Path]] = {}
    reserved: dict[str, list[Path]] = {}
    for name, paths in members.items():
        in_band = [p for p in paths if p.stem in inside]
        ceiling = any(all(outcomes[p.stem]) for p in paths)
        cut = 1 if not ceiling and len(in_band) >= 2 else 0
        reserved[name], candidates[name] = in_band[:cut], in_band[cut:]
    held, overflow = _round_robin(list(candidates.values()), rule.max_heldout)
    held_families = {v3_family(p) for p in held}
    groups = []
    for name, paths in sorted(members.items(), key=lambda kv: kv[0] not in held_families):  # stable
        easy = [p for p in paths if all(outcomes[p.stem])][:2]
        middle = [p for p in reserved[name] + overflow if v3_family(p) == name]
        hard = [p for p in paths if not any(outcomes[p.stem]) and p.stem not in inside][:2]
        groups.append(easy + middle + hard)
    chosen, _ = _round_robin(groups, rule.max_curriculum)
    return held, [p for g in groups for p in g if p in chosen]  # grouped by family, easy first
