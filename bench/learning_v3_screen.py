"""The v3 screening passes (docs/learning_benchmark.md, "v3", 1): cold drafts of every pool
operator, stage 2 when the band is thin, drafts taken from an earlier folder where one is given,
and the split; the outcome is kept in screening.json, whose verdict a rerun repeats."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.learning_arms import ARMS, LearningBenchmark
from bench.learning_frozen import draft_outcomes, run_draft_pass
from bench.learning_reuse import reusable_screening, reuse_record
from bench.learning_screening import Rule, split, stage2, v3_family


class ThinBand(RuntimeError):
    """Too few operators in the band for the evaluation to mean anything, or a needed bank gone."""


class BandTooThin(ThinBand):
    """The screening's verdict: fewer held-out operators than the minimum. Final for the folder
    (a rerun stops the same way), so no "run again to resume"."""

    final = True


def screen(bench: LearningBenchmark, plan: dict[str, Any], settings, seed: int) -> dict[str, Any]:
    """Stage 1, stage 2 when the band is thin, then the split; kept in screening.json."""
    cached = bench.out / "screening.json"
    rule, pool = plan["rule"], plan["pool"]
    if cached.is_file():
        return _enough(json.loads(cached.read_text()), rule)
    bank = bench.seed_bank()
    earlier = reusable_screening(plan["reuse"], plan, seed) if plan.get("reuse") else {}
    taken: dict[int, dict[str, bool]] = {}

    def draft(tasks: list[Path], r: int) -> Path | None:
        """Pass r over `tasks`: the earlier folder's drafts where it has them, new ones for the rest."""
        taken[r] = {p.stem: earlier[r][p.stem] for p in tasks if p.stem in earlier.get(r, {})}
        todo = [p for p in tasks if p.stem not in taken[r]]
        return _screen_pass(bench, settings, bank, todo, seed, r) if todo else None

    passes = {r: draft(pool, r) for r in range(rule.drafts)}
    outcomes = _merge(passes, taken, pool)
    extra = stage2(pool, outcomes, rule)
    if extra:
        print(f"[learning v3] stage 2: the band holds fewer than {rule.target}; {len(extra)} borderline operators "
              f"get {rule.extra_drafts} more drafts", file=sys.stderr)
        passes |= {r: draft(extra, r) for r in range(rule.drafts, rule.drafts + rule.extra_drafts)}
        outcomes = _merge(passes, taken, pool)
    heldout, curriculum = split(pool, outcomes, rule)
    band_size = sum(rule.in_band(sum(d), len(d)) for d in outcomes.values() if d)
    data = {"outcomes": outcomes, "stage2": [p.stem for p in extra], "band": band_size,
            "heldout": [p.stem for p in heldout], "curriculum": [p.stem for p in curriculum],
            "families": {p.stem: v3_family(p) for p in pool},
            "underpowered": len(heldout) < rule.target,
            "summary": f"{len(pool)} operators x {rule.drafts} drafts" + (f", {len(extra)} with {rule.extra_drafts} "
                                                                          "more" if extra else "")
            + f"; {band_size} in the band",
            # the rule's stop, kept with the outcomes: the record of a stopped run is the tool's own
            "stopped": (f"{len(heldout)} held-out operators (band {band_size}), under the minimum of {rule.minimum}"
                        if len(heldout) < rule.minimum else None)}
    if plan.get("reuse"):
        data["reused"] = reuse_record(plan["reuse"], taken)
    cached.write_text(json.dumps(data, indent=2) + "\n")
    return _enough(data, rule)


def _enough(screening: dict[str, Any], rule: Rule) -> dict[str, Any]:
    """The screening, or ThinBand when it leaves fewer held-out operators than the minimum (so a
    rerun of a stopped folder stops again instead of learning)."""
    if len(screening["heldout"]) < rule.minimum:
        raise BandTooThin(f"only {len(screening['heldout'])} held-out operators (band {screening['band']}, minimum "
                          f"{rule.minimum}; screening.json): add near-copies of the operators the cold model solves "
                          "sometimes to the pool (a new --out), see docs/learning_benchmark.md")
    return screening


def _screen_pass(bench: LearningBenchmark, settings, bank: Path, tasks: list[Path], seed: int, r: int) -> Path:
    run_dir = bench.arm_dir(f"screen-d{r}")
    run_draft_pass(settings, run_dir, bank, ARMS["none"], tasks, seed + 100 + r, f"learning-v3-screen-d{r}")
    return run_dir


def _merge(passes: dict[int, Path | None], taken: dict[int, dict[str, bool]], pool: list[Path]) -> dict[str, list[bool]]:
    """Every operator's screening outcomes in pass order: drafts taken from an earlier folder and
    the drafts of this one's passes."""
    outcomes: dict[str, list[bool]] = {p.stem: [] for p in pool}
    for r, run_dir in sorted(passes.items()):
        drafted = draft_outcomes(run_dir) if run_dir else {}
        for task, feasible in (taken.get(r, {}) | drafted).items():
            outcomes.setdefault(task, []).append(feasible)
    return outcomes


def screening_progress(out: Path, plan: dict[str, Any], seed: int) -> dict[str, Any]:
    """Where an unfinished screening stands (`--summary-so-far` before screening.json exists):
    per pass, the operators drafted and solved so far, and the drafts an earlier folder lends."""
    rule: Rule = plan["rule"]
    earlier = reusable_screening(plan["reuse"], plan, seed) if plan.get("reuse") else {}
    passes: dict[str, dict[str, int]] = {}
    solved: set[str] = set()
    for r in range(rule.drafts + rule.extra_drafts):
        run_dir = out / "arms" / f"screen-d{r}"
        drafted = draft_outcomes(run_dir) if (run_dir / "summary.json").is_file() else {}
        lent = earlier.get(r, {}) if r < rule.drafts else {}  # stage 2 takes what its operators need, once known
        if drafted or lent:
            passes[run_dir.name] = {"drafted": len(drafted), "feasible": sum(drafted.values()),
                                    "reused": len(lent), "reused_feasible": sum(lent.values())}
        solved |= {stem for stem, ok in (lent | drafted).items() if ok}
    return {"bench": "learning", "design": "v3", "screening_finished": False, "pool": len(plan["pool"]),
            "stage1_drafts": len(plan["pool"]) * rule.drafts, "passes": passes,
            "solved_at_least_once": sorted(solved)}
