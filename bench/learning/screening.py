"""The learning benchmark's screening (docs/learning_benchmark.md, "v3: analysis plan", 1): cold
drafts of every pool operator (retrieval none, the seeded bank frozen, draft only), stage 2 when
the band is thin, drafts taken from an earlier folder where one is given, and the split.

The rules are pure functions of the screening outcomes, so a resumed run chooses exactly what
the first start chose: the band (operators the cold model solves sometimes), which of them are
held out for the evaluation, and the learning pass's curriculum. The outcome is kept in
screening.json, whose verdict a rerun repeats.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.learning.evaluation import draft_outcomes, run_draft_pass
from bench.learning.learning_pass import LearningBenchmark
from bench.learning.plan import ARMS, COLD_RATE_DESIGNS, Rule, family
from bench.learning.reuse import lent_drafts, reuse_record


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
    solving = {family(p) for p in pool if any(outcomes.get(p.stem, []))}
    inside = set(band(outcomes, rule))
    return [p for p in pool if p.stem in outcomes and outcomes[p.stem] and p.stem not in inside
            and family(p) in solving]


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
            members.setdefault(family(path), []).append(path)
    inside = set(band(outcomes, rule))
    candidates: dict[str, list[Path]] = {}
    reserved: dict[str, list[Path]] = {}
    for name, paths in members.items():
        in_band = [p for p in paths if p.stem in inside]
        ceiling = any(all(outcomes[p.stem]) for p in paths)
        cut = 1 if not ceiling and len(in_band) >= 2 else 0
        reserved[name], candidates[name] = in_band[:cut], in_band[cut:]
    held, overflow = _round_robin(list(candidates.values()), rule.max_heldout)
    held_families = {family(p) for p in held}
    groups = []
    for name, paths in sorted(members.items(), key=lambda kv: kv[0] not in held_families):  # stable
        easy = [p for p in paths if all(outcomes[p.stem])][:2]
        middle = [p for p in reserved[name] + overflow if family(p) == name]
        hard = [p for p in paths if not any(outcomes[p.stem]) and p.stem not in inside][:2]
        groups.append(easy + middle + hard)
    chosen, _ = _round_robin(groups, rule.max_curriculum)
    return held, [p for g in groups for p in g if p in chosen]  # grouped by family, easy first


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
    earlier = lent_drafts(plan, seed)
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
        print(f"[learning] stage 2: the band holds fewer than {rule.target}; {len(extra)} borderline operators "
              f"get {rule.extra_drafts} more drafts", file=sys.stderr)
        passes |= {r: draft(extra, r) for r in range(rule.drafts, rule.drafts + rule.extra_drafts)}
        outcomes = _merge(passes, taken, pool)
    heldout, curriculum = split(pool, outcomes, rule)
    band_size = sum(rule.in_band(sum(d), len(d)) for d in outcomes.values() if d)
    data = {"outcomes": outcomes, "stage2": [p.stem for p in extra], "band": band_size,
            "heldout": [p.stem for p in heldout], "curriculum": [p.stem for p in curriculum],
            "families": {p.stem: family(p) for p in pool},
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
    run_draft_pass(settings, run_dir, bank, ARMS["none"], tasks, seed + 100 + r, f"{bench.out.name}-screen-d{r}")
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
    earlier = lent_drafts(plan, seed)
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


def cold_rates(plan: dict[str, Any], screening: dict[str, Any], backend: str) -> dict[str, list[int]]:
    """v4's `memory.cold_rates` for the value arm: per family of the draft decision (actors/families.py,
    read from each task's reference, as the episode reads it), [feasible, drafts] of the screening's
    cold drafts over every pool operator. Without them a family's first fresh drafts go bare to
    measure it (memory_actor/slots.py)."""
    from actors.families import dominant_family

    rates: dict[str, list[int]] = {}
    for path in plan["pool"]:
        drafts = screening["outcomes"].get(path.stem) or []
        if drafts:
            entry = rates.setdefault(f"{backend}/{dominant_family(path.read_text())}", [0, 0])
            entry[0], entry[1] = entry[0] + sum(drafts), entry[1] + len(drafts)
    return dict(sorted(rates.items()))


def operator_cold_rates(plan: dict[str, Any], screening: dict[str, Any], backend: str) -> dict[str, list[int]]:
    """Each pool operator's own screening record, keyed backend/family/task: bare's prior for that
    operator in the draft decision (issue 54: the operator's own cold rate where known)."""
    from actors.families import dominant_family

    return {f"{backend}/{dominant_family(path.read_text())}/{path.stem}": [sum(drafts), len(drafts)]
            for path in plan["pool"] if (drafts := screening["outcomes"].get(path.stem))}


def arm_memories(plan: dict[str, Any], screening: dict[str, Any], out: Path) -> tuple[dict, dict]:
    """The memory settings of each arm in the learning pass and in the frozen evaluation. v3: the
    arm's retrieval mode alone (ARMS). v4: the value arm also gets screening's cold rates (kept
    in cold_rates.json), and takes its posterior means when frozen (`slot_greedy`: nothing is
    learnt from exploring a frozen bank); since issue 54 each pool operator's own record too
    (keys backend/family/task), and never the rates shipped for users."""
    learning = {arm: dict(ARMS[arm]) for arm in plan["arms"]}
    evaluation = {arm: dict(ARMS[arm]) for arm in plan["arms"]}
    if plan.get("design", "v3") in COLD_RATE_DESIGNS and "value" in plan["arms"]:
        rates = cold_rates(plan, screening, plan["backend"]) | operator_cold_rates(plan, screening, plan["backend"])
        (out / "cold_rates.json").write_text(json.dumps(rates, indent=2) + "\n")
        # the benchmark measures its own rates: the ones shipped for users (memory.shipped_rates)
        # come from earlier runs of these very operators
        learning["value"] |= {"cold_rates": rates, "shipped_rates": False}
        evaluation["value"] |= {"cold_rates": rates, "slot_greedy": True, "shipped_rates": False}
    return learning, evaluation


def arm_episodes(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Episode settings of each arm's learning pass beyond the benchmark's own. v6 as v5, with the
    first V6_FRESH_DRAFTS drafts of every operator fresh draws from the rung (issue 64). v5 (issue 54,
    point 4): the value arm starts each curriculum operator from its family's first rung where
    the rung maps onto it (`episode.start_from_rung`), so that its bank ends the pass with
    same-family, same-shape kernels and its decision with fresh evidence of the rung; `none` is
    the static brief, untouched. The frozen evaluation never starts from a rung."""
    if plan.get("design", "v3") == "v5" and "value" in plan["arms"]:
        return {"value": {"start_from_rung": True}}
    if plan.get("design", "v3") == "v6" and "value" in plan["arms"]:
        # issue 64.3: each curriculum operator drafted fresh V6_FRESH_DRAFTS times, each from its rung
        # where one maps, every feasible one banked as a kernel of its family and shape
        return {"value": {"start_from_rung": True, "fresh_drafts": V6_FRESH_DRAFTS}}
    return {}


V6_FRESH_DRAFTS = 4
