"""The learning benchmark's plan: the screening pool, the command line, the estimate of what a
run costs, and plan.json, which ties a results folder to the plan that started it.

The pool, in its pre-registered order (docs/learning_benchmark.md, "v3: analysis plan"): six
operator families of level-1 tasks, each listed from the member a small model is likeliest to
solve to the hardest (the retired v2 design's families) followed by the near-copies added for
v3 (suites/cpu/level1 45-65). `--wide-pool` appends, family by family, the near-copies added
when the cpu band was thin (level-1 66-92 and four more activations). Order matters only where
a rule says "in pool order".
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from launch.campaign import CampaignError, select_tasks

FAMILIES: dict[str, list[str]] = {
    "elementwise": ["4_ReLU", "7_Sigmoid", "9_LeakyReLU", "5_GELU", "10_HardSwish", "11_Softplus",
                    "45_ReLU6", "46_Hardtanh", "47_Softsign", "48_HardSigmoid", "49_Mish", "50_SELU"],
    "reduction": ["14_SumOverDim", "15_MeanOverDim", "16_MaxOverDim", "17_ArgmaxOverDim",
                  "55_MinOverDim", "56_SumOverLastDim", "57_ArgminOverDim", "58_L1NormOverDim"],
    "softmax_norm": ["18_Softmax", "19_LogSoftmax", "23_L2Normalize", "21_RMSNorm", "20_LayerNorm"],
    "matmul": ["24_SquareMatmul", "25_RectMatmul", "27_MatVec", "29_MatmulScaled", "28_MatmulTransposedA",
               "26_BatchedMatmul", "51_VecMat", "52_MatmulTransposedB", "53_MatmulAddBias", "54_TransposedMatVec"],
    "window": ["32_AvgPool1d", "30_MaxPool1d", "33_AvgPool2d", "31_MaxPool2d", "34_Conv1d",
               "59_MaxPool1dNoPad", "60_AvgPool1dNoPad", "61_MaxPool2dNoPad", "62_AvgPool2dSame"],
    "scan": ["37_Cumsum", "39_ReverseCumsum", "38_Cumprod", "63_CumsumDim0", "64_Cummax", "65_ExclusiveCumsum"],
}
# The wide pool's additions: near-copies of the operators the cold model solved sometimes
# (the cpu run of 2026-11-27 stopped with 8 band members in the 50) and the suite's
# activations the families left out.
WIDE_ADDITIONS: dict[str, list[str]] = {
    "elementwise": ["6_SiLU", "8_Tanh", "12_ELU", "13_Sqrt", "66_LogSigmoid", "67_Softshrink", "68_Hardshrink",
                    "69_Tanhshrink", "70_Threshold", "71_CELU", "72_PReLU", "73_SquaredReLU", "74_Abs", "75_Sign",
                    "76_Exp"],
    "reduction": ["77_MaxOverLastDim", "78_MinOverLastDim", "79_MeanOverMiddleDim", "80_SumOverFirstDim",
                  "81_ProdOverLastDim", "82_RowSum", "83_RowMean", "84_SumOfSquaresOverLastDim",
                  "85_MeanOverLastDimKeepdim"],
    "matmul": ["86_MatVec1d", "87_MatVecAddBias", "88_MatVecScaled", "89_TallSkinnyMatmul", "90_ShortWideMatmul",
               "91_OuterProduct", "92_BatchedMatVec"],
}
# arm -> how its memory differs from the others (same model, budget, operators and seed bank)
ARMS: dict[str, dict[str, Any]] = {
    "none": {"retrieval": "none"},
    "similarity": {"retrieval": "similarity"},
    "value": {"retrieval": "value"},
}
# The retired v2 run measured 66-85 s an attempt (its two replicates, 2026-11-24); drafts of v3
# have the same prompts, so the estimate takes the slower figure.
SECONDS_PER_ATTEMPT = 85.0
SECONDS_PER_ATTEMPT_FAST = 66.0
DOMAIN_FLOOR = {"cpu": False, "npu-twin": True}  # npu-twin: 0 of 3 is in the band
# domain -> (treated, baseline) of the primary comparison (v3)
PRIMARY = {"cpu": ("value", "similarity"), "npu-twin": ("value", "none")}
DESIGNS = ("v3", "v4", "v5", "v6")


@dataclass(frozen=True)
class Target:
    """A design's pre-registered primary comparison in one domain (docs/learning_benchmark.md)."""

    treated: str
    baseline: str
    points: float  # the least mean difference of pass@1 that meets the target
    needs_p: bool  # the difference must also be significant (Wilcoxon p < alpha)
    compile_errors: bool  # v4: compile errors treated <= none is part of the target
    compile_error_allowance: int = 0  # v6's C: treated may have this many more compile errors than none

    @property
    def name(self) -> str:
        return f"{self.treated}_vs_{self.baseline}"


TARGETS: dict[tuple[str, str], Target] = {
    ("v3", "cpu"): Target("value", "similarity", 0.15, True, False),
    ("v3", "npu-twin"): Target("value", "none", 0.30, True, False),
    # issue 41: in C the memory never costs the user (+5 points, no test asked); on the twin +30 at p < 0.05
    ("v4", "cpu"): Target("value", "none", 0.05, False, True),
    ("v4", "npu-twin"): Target("value", "none", 0.30, True, True),
    # issue 54: in C the memory costs at most 2 points (no test asked); on the twin +20 at p < 0.05;
    # compile errors value <= none in both
    ("v5", "cpu"): Target("value", "none", -0.02, False, True),
    ("v5", "npu-twin"): Target("value", "none", 0.20, True, True),
    # issue 64: on the twin +15 at p < 0.05 with compile errors value <= none; in C at most 2 points
    # below none (no test asked) with compile errors value <= none + 5 (v5 missed "<=" by one draft on
    # identical prompts)
    ("v6", "cpu"): Target("value", "none", -0.02, False, True, compile_error_allowance=5),
    ("v6", "npu-twin"): Target("value", "none", 0.15, True, True),
}
# Designs whose memory settings are v4's (the value arm's cold rates, greedy when frozen, the
# load-proof limits); v5 adds the learning pass that starts from the rungs (`arm_episodes`).
COLD_RATE_DESIGNS = ("v4", "v5", "v6")
# v4: no time limit on the way may fire because the machine is busy (the benchmark runs at nice 19
# beside test suites; a starved draft must not count as the model's failure). Wall-clock limits
# raised far above anything an idle machine needs; CPU-time limits (harness.cpu_time_limit_s) stay.
# Issue 67's stop rules (on by default since) did not exist when v3-v5 ran: every design keeps its
# learning pass's volume, so no operator's refining or drafting stops before its iterations.
NO_STOP_RULES = ["episode.plateau_refinements=0", "episode.uncompiled_drafts=0"]
LOAD_PROOF = ["llm.timeout_s=7200", "llm.endpoint_wait_s=3600", "local_llm.startup_timeout_s=3600",
              "harness.compile_timeout_s=3600", "harness.run_timeout_s=3600", "harness.call_time_limit_min_s=300",
              "harness.task_load_timeout_s=1800"]


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


def arm_memory(settings, memory: dict[str, Any], bank: Path, seed: int):
    """The memory settings of an arm, validated: a setting this memory does not have is an
    error, never silently dropped."""
    from memory_actor.config import MemoryConfig

    values = {**settings.memory.model_dump(), **memory, "uri": str(bank), "seed": seed}
    return MemoryConfig.model_validate(values)


def family(path: Path) -> str:
    for families in (FAMILIES, WIDE_ADDITIONS):
        for name, stems in families.items():
            if path.stem in stems:
                return name
    return "level2" if "level2" in path.parts else "other"


def pool_globs(wide: bool = False) -> list[str]:
    """The screening pool in its fixed order: family by family, the v3 members first, then (wide)
    the additions."""
    return [stem for name, members in FAMILIES.items() for stem in members + (WIDE_ADDITIONS.get(name, []) if wide else [])]


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


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.learning", description="The learning benchmark: pass@1 of "
                                "fresh drafts on held-out operators, each arm's bank frozen after a learning pass")
    p.add_argument("--backend", choices=sorted(PRIMARY), default="cpu", help="domain: plain C (cpu) or Ascend C "
                   "on the CPU twin (npu-twin)")
    p.add_argument("--design", choices=DESIGNS, default="v3", help="v4: the targets of issue 41, the value arm "
                   "with screening's cold rates (greedy when frozen), time limits that load cannot trip; v5: v4 "
                   "with issue 54's decision, the value arm's learning pass starting from the rungs, its targets; "
                   "v6: v5 with issue 64's brief and ladder, four fresh rung drafts per curriculum operator, its targets")
    p.add_argument("--out", default=None, help="results folder (default runs/learning-<design>-<backend>); rerun to resume")
    p.add_argument("--suite", default=None, help="task folder (default: bundled suites/cpu)")
    p.add_argument("--pool", default=None, help="comma-separated globs of the screening pool (default: the families)")
    p.add_argument("--wide-pool", action="store_true", help="the families plus the near-copies added when the "
                   "cpu band was thin (level-1 tasks 66-92 and four more activations)")
    p.add_argument("--reuse-screening", default=None, metavar="DIR", help="take the screening drafts of this earlier "
                   "folder (same backend, suite, seed and rule; prompts checked identical) and draft only the rest")
    p.add_argument("--arms", default=",".join(ARMS), help="comma-separated subset of none,similarity,value")
    p.add_argument("--screen-drafts", type=int, default=3, help="cold drafts per pool operator (stage 1)")
    p.add_argument("--eval-drafts", type=int, default=8, help="k: fresh drafts per held-out operator and arm")
    p.add_argument("--iterations", type=int, default=6, help="attempts per curriculum operator in the learning pass")
    p.add_argument("--max-heldout", type=int, default=24)
    p.add_argument("--max-curriculum", type=int, default=12)
    p.add_argument("--min-heldout", type=int, default=8, help="fewer held-out operators stop the run before learning")
    p.add_argument("--seed", type=int, default=0, help="memory.seed of the learning pass (evaluation pass r: seed+100+r)")
    p.add_argument("--llm-base-url", default=None, help="OpenAI-compatible endpoint (default: serve the local model)")
    p.add_argument("--llm-model", default=None, help="model name at that endpoint")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any other setting")
    p.add_argument("--seconds-per-attempt", type=float, default=SECONDS_PER_ATTEMPT)
    p.add_argument("--dry-run", action="store_true", help="print the plan and its estimated duration, run nothing")
    p.add_argument("--summary-so-far", action="store_true", help="run nothing: summarise what --out holds, by "
                   "the plan its plan.json records (the other flags are not needed)")
    p.add_argument("--publish", action="store_true", help="copy summary.md/.json into bench/results/")
    return p.parse_args(argv)


def plan_of(args: argparse.Namespace) -> dict[str, Any]:
    from launch.campaign import default_suite

    suite = Path(args.suite).expanduser().resolve() if args.suite else default_suite()
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    if set(arms) - set(ARMS):
        raise SystemExit(f"bench.learning: arms are {', '.join(ARMS)}")
    if args.pool and args.wide_pool:
        raise SystemExit("bench.learning: --pool or --wide-pool, not both")
    pool = resolve(suite, [g.strip() for g in args.pool.split(",")] if args.pool else pool_globs(args.wide_pool))
    if not pool:
        raise SystemExit(f"bench.learning: the screening pool is empty in {suite}")
    reuse = Path(args.reuse_screening).expanduser().resolve() if args.reuse_screening else None
    if args.screen_drafts < 2 or args.eval_drafts < 1 or args.iterations < 1:
        raise SystemExit("bench.learning: --screen-drafts >= 2, --eval-drafts and --iterations >= 1")
    rule = Rule(drafts=args.screen_drafts, floor_admitted=DOMAIN_FLOOR[args.backend],
                extra_drafts=args.screen_drafts, minimum=args.min_heldout, max_heldout=args.max_heldout,
                max_curriculum=args.max_curriculum)
    return {"design": args.design, "backend": args.backend, "suite": suite, "pool": pool, "arms": arms, "rule": rule,
            "reuse": reuse, "iterations": args.iterations, "eval_drafts": args.eval_drafts, "seed": args.seed}


def estimate(plan: dict[str, Any], seconds_per_attempt: float, reused: int = 0) -> dict[str, Any]:
    """Attempts and hours of the plan; `reused` stage-1 drafts come from an earlier folder."""
    rule, arms = plan["rule"], len(plan["arms"])
    screening = len(plan["pool"]) * rule.drafts - reused
    screening_max = screening + len(plan["pool"]) * rule.extra_drafts
    learning = arms * min(rule.max_curriculum, len(plan["pool"])) * plan["iterations"]
    evaluation = arms * min(rule.max_heldout, len(plan["pool"])) * plan["eval_drafts"]
    attempts, most = screening + learning + evaluation, screening_max + learning + evaluation
    return {"screening_attempts": screening, "screening_attempts_with_stage2": screening_max,
            "learning_attempts_max": learning, "evaluation_attempts_max": evaluation,
            "attempts": attempts, "attempts_max": most, "seconds_per_attempt": seconds_per_attempt,
            "estimated_s": round(attempts * seconds_per_attempt),
            "estimated_s_at_66": round(attempts * SECONDS_PER_ATTEMPT_FAST),
            "estimated_s_max": round(most * seconds_per_attempt)}


def recorded(plan: dict[str, Any]) -> dict[str, Any]:
    """What plan.json records of a plan."""
    from bench.learning.resume import portable

    entry = {"design": plan.get("design", "v3"), "backend": plan["backend"], "suite": portable(plan["suite"]),
             "pool": [p.stem for p in plan["pool"]], "arms": plan["arms"], "rule": plan["rule"].__dict__,
             "eval_drafts": plan["eval_drafts"], "iterations": plan["iterations"], "seed": plan["seed"]}
    if plan["reuse"]:  # only when given: folders started before the flag keep their recorded plan
        entry["reuse_screening"] = portable(plan["reuse"])
    return entry


def check_same_plan(out: Path, plan: dict[str, Any]) -> None:
    """A results folder resumes only the benchmark that started it; plan.json is written on the
    first start."""
    path = out / "plan.json"
    entry = recorded(plan)
    if path.is_file() and json.loads(path.read_text()) != entry:
        raise SystemExit(f"bench.learning: {out} holds a benchmark with another plan ({path}); "
                         "pick a new --out or repeat that benchmark's flags")
    path.write_text(json.dumps(entry, indent=2) + "\n")


def plan_in(out: Path) -> dict[str, Any]:
    """The plan a results folder's plan.json records, with paths resolved against this checkout
    (the suite and an earlier folder are recorded relative to the repository): what a summary of
    that folder needs, wherever it lies and whatever the command line says."""
    from bench.learning.resume import REPOSITORY

    path = out / "plan.json"
    if not path.is_file():
        raise SystemExit(f"bench.learning: {out} has no plan.json (not a results folder of this benchmark)")
    entry = json.loads(path.read_text())
    suite = REPOSITORY / entry["suite"] if not Path(entry["suite"]).is_absolute() else Path(entry["suite"])
    reuse = entry.get("reuse_screening")
    return {"design": entry.get("design", "v3"), "backend": entry["backend"], "suite": suite, "pool": resolve(suite, entry["pool"]), "arms": entry["arms"],
            "rule": Rule(**entry["rule"]), "reuse": (REPOSITORY / reuse if reuse and not Path(reuse).is_absolute()
                                                     else Path(reuse) if reuse else None),
            "iterations": entry["iterations"], "eval_drafts": entry["eval_drafts"], "seed": entry["seed"]}
