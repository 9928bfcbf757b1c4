"""Replays of the draft decision (memory_actor/slots.py) on a benchmark's logged drafts: an
estimate, before a run, of what the decision would have scored.

v4 and v5 folders (plan.json `"design"`; issue 54.5): the decision as it is now, on the frozen
value bank of the run (its learning pass's slot statistics, banks/learn-value), greedy as a
frozen evaluation is, with bare's prior from the run's screening: each held-out operator's own
cold drafts and its family's (the benchmark's `cold_rates`, nothing shipped). Its candidates are
the bank's: the generic example, the family's examples, the family's banked kernels (their
signature shape left out: a kernel option nobody tried cannot beat bare, so this only adds
options that stay unchosen without fresh evidence). Each held-out operator is scored with the
logged rate of the option chosen for it: bare with the `none` arm's drafts of it, a memory
option with the `value` arm's drafts of it that showed that option (none logged: counted apart,
`unlogged`). An estimate, not a measurement: where the decision keeps what was logged it is
exact up to sampling, elsewhere it is not defined. On a v5 folder, whose evaluation ran this
decision, it reproduces the logged choices and says why, per family: the frozen bank's fresh
record of each option, on how many operators a memory option's posterior mean was above bare's,
and on how many of those its expected cost was above `slot_max_loss` (which kept bare). Its
candidates are not filtered by signature shape as a run's are, so those counts are an upper bound.

v3 folders (issue 41): each logged draft of an evaluation folder (arms/eval-*/attempts.jsonl)
is classified by what its prompt held beyond the static brief (field `shown`): bare (core API
items only), a kernel of the task's own family or of another family in the slot (role
`example`), a pinned item (role `pinned`; v3 pinned its family fragments and logged them with
the role `template`), ranked items (role `context`). Per domain and family, the decision may
choose only what it can still produce: bare, or a same-family kernel with or without ranked items
(no cross-family kernel, no ranked items around the decision; v3's fragments are gone and the
family examples that replace them were never logged, so they are left out: the estimate is a
lower bound for families where an example would help). It takes, per
family, the option of the highest posterior mean (Beta(1, 2) for memory, bare's prior the
family's cold record from the `none` arm), as issue 41's frozen greedy decision would, and scores
it with that option's logged rate in the family. Options were not randomised over operators, so
this is confounded by which operators showed what: an estimate, not a measurement.

    python -m bench.decision_replay runs/learning-v4-cpu runs/learning-v4-npu-twin

(after `python -m bench.learning unpack bench/results/<run> --to runs/...`). Prints one JSON line
per folder (`"bench": "decision_replay"`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

from actors.families import dominant_family

SUITE = Path(__file__).resolve().parents[1] / "suites" / "cpu"
PILOT_TASKS = Path(__file__).resolve().parent / "learning" / "pilot_tasks"  # the pilot's operators (pilot.py)
PILOT_TASKS_V6 = PILOT_TASKS.with_name("pilot_tasks_v6")  # the v6 pilot's (pilot_v6.py)
MEMORY_PRIOR = (1.0, 2.0)  # v3's and v4's memory.memory_prior (retired by issue 54)
REPLAYED = ("bare", "kernel-same", "kernel-same+ranked")


def family_of(task: str) -> str:
    found = [*SUITE.glob(f"level*/{task}.py"), *PILOT_TASKS.glob(f"{task}.py"), *PILOT_TASKS_V6.glob(f"{task}.py")]
    return dominant_family(found[0].read_text()) if found else "unknown"


def option_of(draft: dict) -> str:
    """What the draft's prompt held beyond the static brief, in the decision's terms."""
    roles = {shown["role"]: shown for shown in draft["shown"]}
    ranked = "+ranked" if "context" in roles else ""
    if "example" in roles:
        example = roles["example"]
        same = example.get("task") and family_of(example["task"]) == family_of(draft["task"])
        return ("kernel-same" if same else "kernel-cross") + ranked
    if "pinned" in roles or "template" in roles:  # v3 logged its pinned fragments with role "template"
        return "pinned" + ranked
    return "generic" + ranked if ranked else "bare"


def replay(folder: Path) -> dict:
    counts: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])  # arm, family, option
    for path in sorted(folder.glob("arms/eval-*/attempts.jsonl")):
        arm = path.parent.name.removeprefix("eval-").rsplit("-", 1)[0]
        for line in path.read_text().splitlines():
            draft = json.loads(line)
            if draft["stage"] != "draft" or draft["reward"] is None:
                continue
            record = counts[arm, family_of(draft["task"]), option_of(draft)]
            record[0] += int(draft["feasible"])
            record[1] += 1
    families = sorted({family for _, family, _ in counts})
    chosen, estimate, drafts = {}, 0.0, 0
    for family in families:
        cold_s, cold_n = counts["none", family, "bare"]
        options = {"bare": ((1 + cold_s) / (2 + cold_n), cold_s / cold_n if cold_n else 0.0)}
        for option in REPLAYED[1:]:
            s, n = (sum(counts[arm, family, option][i] for arm in ("similarity", "value")) for i in (0, 1))
            if n:
                options[option] = ((MEMORY_PRIOR[0] + s) / (sum(MEMORY_PRIOR) + n), s / n)
        best = max(options, key=lambda key: options[key][0])
        chosen[family] = {"option": best, "rate": round(options[best][1], 3),
                          "logged": {key: counts_of(counts, family, key) for key in options}}
        estimate += options[best][1] * cold_n  # the held-out drafts of the family, as many as none's
        drafts += cold_n
    arms = {arm: sum(s for (a, _, _), (s, _) in counts.items() if a == arm) /
            max(1, sum(n for (a, _, _), (_, n) in counts.items() if a == arm)) for arm in ("none", "similarity", "value")}
    return {"bench": "decision_replay", "folder": str(folder), "drafts": sum(n for _, n in counts.values()),
            **{f"pass1_{arm}": round(rate, 3) for arm, rate in arms.items()},
            "pass1_decision_estimate": round(estimate / max(1, drafts), 3), "families": chosen}


def counts_of(counts: dict, family: str, option: str) -> list[int]:
    if option == "bare":
        return list(counts["none", family, "bare"])
    return [sum(counts[arm, family, option][i] for arm in ("similarity", "value")) for i in (0, 1)]


@cache
def rung_ids() -> frozenset[str]:
    """The bundles' first rungs, every shape's (issues 54 and 64), told apart from the families'
    idiomatic examples by id (a rung's id names its backend, family, task and rung, not its text)."""
    from memory_actor.seeding import BUNDLE_BACKENDS, family_rungs

    return frozenset(item.id for backend in BUNDLE_BACKENDS for items in family_rungs(backend).values()
                     for item in items)


def logged_option(draft: dict) -> str:
    """The decision's option a v4 or v5 draft's prompt showed (its `shown` field): the slot's kind
    (a first rung, a family example, a banked kernel; else bare) and whether ranked items came."""
    slot = next((shown for shown in draft["shown"] if shown["role"] in ("example", "pinned", "template")), None)
    ranked = any(shown["role"] == "context" for shown in draft["shown"])
    if slot is None:
        return "generic+ranked" if ranked else "bare"
    kind = "rung" if slot["id"] in rung_ids() else "example" if slot["kind"] == "api" else "kernels"
    return kind + ("+ranked" if ranked else "")


def replay_v4(folder: Path) -> dict:
    import numpy as np

    from actors.briefing import task_brief
    from actors.context import slot_request
    from memory_actor.bank import MemoryBank
    from memory_actor.config import MemoryConfig
    from memory_actor.slots import decide
    from npu_pool.backends import get_backend
    from npu_pool.tasks.spec import load_task

    plan = json.loads((folder / "plan.json").read_text())
    backend = plan["backend"]
    screening = json.loads((folder / "screening.json").read_text())
    cold = {key: tuple(value) for key, value in json.loads((folder / "cold_rates.json").read_text()).items()}
    logged: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])  # arm, task, option
    for path in sorted(folder.glob("arms/eval-*/attempts.jsonl")):
        arm = path.parent.name.removeprefix("eval-").rsplit("-", 1)[0]
        for line in path.read_text().splitlines():
            draft = json.loads(line)
            if draft["stage"] == "draft" and draft["reward"] is not None and draft["iteration"] == 1:
                record = logged[arm, draft["task"], logged_option(draft)]
                record[0] += int(draft["feasible"])
                record[1] += 1
    heldout = screening["heldout"]
    for task in heldout:
        outcomes = screening["outcomes"][task]
        cold[f"{backend}/{family_of(task)}/{task}"] = (sum(outcomes), len(outcomes))
    config = MemoryConfig(uri=str(folder / "banks" / "learn-value"), retrieval="value", cold_rates=cold,
                          shipped_rates=False, slot_greedy=True, preload_embedder=False)
    bank = MemoryBank(config, read_only=True)
    target, files = get_backend(backend), suite_files(folder, plan, heldout)
    families: dict[str, dict] = {}
    rates, unlogged = [], []
    try:
        for task in heldout:
            family = family_of(task)
            # the options a fresh draft of the task had: its brief's (the family's rung and example
            # only where their signature maps onto the task's), listed as the live bank lists them
            slot = slot_request(task_brief(load_task(files[task]), target, "kernel"), retry=False)
            candidates, kernels = bank.slot_candidates(backend, slot)
            choice = decide("value", backend, slot, candidates + kernels, bank.slots, config, np.random.default_rng(0))
            arm = "none" if choice.option == "bare" else "value"
            s, n = logged[arm, task, choice.option]
            entry = families.setdefault(family, {"operators": 0, "chosen": {}, "feasible": 0, "drafts": 0,
                                                 "fresh_record": fresh_record(bank.slots.counts, backend, family),
                                                 "memory_above_bare": 0, "kept_bare_by_max_loss": 0})
            entry["operators"] += 1
            entry["chosen"][choice.option] = entry["chosen"].get(choice.option, 0) + 1
            bare, *memory = choice.options
            best = max(memory, key=lambda o: o.mean, default=None)
            if best is not None and best.mean > bare.mean:
                entry["memory_above_bare"] += 1
                entry["kept_bare_by_max_loss"] += int(choice.option == "bare" and (best.loss or 0.0) > config.slot_max_loss)
            entry["feasible"] += s
            entry["drafts"] += n
            if n:
                rates.append(s / n)
            else:
                unlogged.append(task)
    finally:
        bank.close()
    arms = {arm: [sum(s for (a, t, _), (s, _) in logged.items() if a == arm and t == task) /
                  max(1, sum(n for (a, t, _), (_, n) in logged.items() if a == arm and t == task)) for task in heldout]
            for arm in ("none", "value")}
    return {"bench": "decision_replay", "design": plan.get("design", "v4"), "folder": str(folder), "backend": backend,
            "operators": len(heldout), **{f"pass1_{arm}": round(float(np.mean(r)), 3) for arm, r in arms.items()},
            "pass1_decision_estimate": round(float(np.mean(rates)), 3) if rates else None,
            "unlogged": unlogged, "families": families}


def suite_files(folder: Path, plan: dict, tasks: list[str]) -> dict[str, Path]:
    """The held-out tasks' files, found as the benchmark finds them (`plan.resolve`): in the run's
    suite (`plan.json`'s, relative to the checkout the run ran in, the folder's parent's parent),
    else in this checkout's copy of that suite."""
    from bench.learning.archive import REPOSITORY
    from bench.learning.plan import resolve

    files: dict[str, Path] = {}
    for root in (REPOSITORY / plan["suite"], folder.parent.parent / plan["suite"]):  # the run's own last: it wins
        files |= {path.stem: path for path in resolve(root, tasks)}
    missing = [task for task in tasks if task not in files]
    if missing:
        raise FileNotFoundError(f"{', '.join(missing)}: in neither the run's suite nor this checkout's {plan['suite']}")
    return files


def fresh_record(counts: dict[str, list[int]], backend: str, family: str) -> dict[str, list[int]]:
    """The frozen bank's fresh drafts per option in one family (successes, drafts)."""
    prefix = f"{backend}/{family}/fresh/"
    return {key.removeprefix(prefix): list(value) for key, value in sorted(counts.items())
            if key.startswith(prefix) and key.removeprefix(prefix) != "all" and "@" not in key}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.decision_replay", description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="unpacked results folders (runs/learning-v3-*, -v4-*)")
    args = parser.parse_args(argv)
    for folder in args.folders:
        if not any(folder.glob("arms/eval-*/attempts.jsonl")):
            print(f"{folder}: no arms/eval-*/attempts.jsonl", file=sys.stderr)
            return 2
        plan = folder / "plan.json"
        design = json.loads(plan.read_text()).get("design", "v3") if plan.is_file() else "v3"
        print(json.dumps(replay(folder) if design == "v3" else replay_v4(folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
