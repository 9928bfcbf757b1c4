"""Screening drafts of an earlier v3 or v4 folder, taken over by a new one (`--reuse-screening DIR`).

The thin-band rule stops a folder and names its remedy: near-copies added to the pool, a new
folder. The earlier folder's cold drafts are samples of the same model from the same cold
prompts (check that the prompts are byte-identical at both commits before reusing them:
docs/learning_benchmark.md, "The remedy for a thin band"), so the new folder takes them pass by
pass, and drafts only the operators and passes they do not cover. What was taken is recorded in
screening.json (`reused`). The earlier folder is read once per command (`lent_drafts` keeps
what it read in the plan): the estimate and the screening see the same drafts. A folder whose
screening finished lends every draft its screening.json holds (those it took from a folder before
it included): v4 takes v3's screening whole, so its held-out operators and curriculum are v3's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.learning.evaluation import draft_outcomes
from bench.learning.resume import portable

# the plan's entries that must agree for an earlier draft to count as one of this plan's
_SAME = ("backend", "suite", "seed")
# designs whose screening is the same (v4 and v5 changed the memory and the targets, not the screening)
SCREENING_DESIGNS = ("v3", "v4", "v5")


def reusable_screening(source: Path, plan: dict[str, Any], seed: int) -> dict[int, dict[str, bool]]:
    """Screening pass r -> {operator: feasible} of the earlier folder `source`, for the operators
    of this plan's pool only. Refused (SystemExit) when `source` is not a v3 folder of the same
    backend, suite, seed and screening rule: its drafts would not be this plan's."""
    recorded_path = source / "plan.json"
    if not recorded_path.is_file():
        raise SystemExit(f"bench.learning: --reuse-screening {source}: no plan.json there (not a results folder of this benchmark)")
    recorded = json.loads(recorded_path.read_text())
    rule = plan["rule"]
    wanted = {"backend": plan["backend"], "suite": portable(plan["suite"]), "seed": seed}
    differ = [f"{key} {recorded.get(key)!r} (here {wanted[key]!r})" for key in _SAME if recorded.get(key) != wanted[key]]
    if recorded.get("design") not in SCREENING_DESIGNS:
        differ.append(f"design {recorded.get('design')!r} (here one of {', '.join(SCREENING_DESIGNS)})")
    old_rule = recorded.get("rule", {})
    differ += [f"rule.{key} {old_rule.get(key)!r} (here {getattr(rule, key)!r})"
               for key in ("drafts", "extra_drafts", "floor_admitted") if old_rule.get(key) != getattr(rule, key)]
    if differ:
        raise SystemExit(f"bench.learning: --reuse-screening {source}: its drafts are not this plan's: "
                         + "; ".join(differ))
    pool = {p.stem for p in plan["pool"]}
    passes: dict[int, dict[str, bool]] = {}
    finished = source / "screening.json"
    if finished.is_file():  # its every draft in pass order, those it took from a folder before it included
        whole = (rule.drafts, rule.drafts + rule.extra_drafts)  # a draft per pass (one left out shifts the rest)
        for stem, drafts in json.loads(finished.read_text())["outcomes"].items():
            for r, feasible in enumerate(drafts if stem in pool and len(drafts) in whole else []):
                passes.setdefault(r, {})[stem] = feasible
        return passes
    for r in range(rule.drafts + rule.extra_drafts):
        run_dir = source / "arms" / f"screen-d{r}"
        if (run_dir / "summary.json").is_file():
            passes[r] = {stem: ok for stem, ok in draft_outcomes(run_dir).items() if stem in pool}
    return passes


def lent_drafts(plan: dict[str, Any], seed: int) -> dict[int, dict[str, bool]]:
    """The drafts the plan's earlier folder lends ({} without one), read on the first call and
    kept in the plan for the next."""
    if not plan.get("reuse"):
        return {}
    if "lent" not in plan:
        plan["lent"] = reusable_screening(plan["reuse"], plan, seed)
    return plan["lent"]


def reuse_record(source: Path, taken: dict[int, dict[str, bool]]) -> dict[str, Any]:
    """screening.json's `reused`: where from, the commit that folder started at, and which
    operators' drafts of which pass were taken."""
    commit = source / "git_commit"
    return {"from": portable(source.resolve()), "started_at_commit": commit.read_text().strip() if commit.is_file() else None,
            "passes": {f"screen-d{r}": sorted(outcomes) for r, outcomes in sorted(taken.items()) if outcomes},
            "drafts": sum(len(outcomes) for outcomes in taken.values())}
