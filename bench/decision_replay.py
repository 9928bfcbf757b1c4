"""Replay of the draft decision (memory_actor/slots.py, issue 41) on v3's logged evaluation drafts:
an estimate, before any v4 run, of what the one-decision policy would have scored.

Each logged draft of a v3 evaluation folder (arms/eval-*/attempts.jsonl) is classified by what
its prompt held beyond the static brief (field `shown`): bare (core API items only), a kernel of
the task's own family or of another family in the slot (role `example`), a pinned item (role
`pinned`; v3 pinned its family fragments and logged them with the role `template`), ranked items
(role `context`). Per domain and family, the decision may choose only what it can still produce:
bare, or a same-family kernel with or without ranked items (no cross-family kernel, no ranked
items around the decision; v3's fragments are gone and the family examples that replace them
were never logged, so they are left out: the estimate is a lower bound for families where an
example would help). It takes, per family, the option of the highest
posterior mean (Beta(1, 2) for memory, bare's prior the family's cold record from the `none`
arm), as a frozen bank's greedy decision would, and scores it with that option's logged rate in
the family. Options were not randomised over operators, so this is confounded by which operators
showed what: an estimate, not a measurement.

    python -m bench.decision_replay runs/learning-v3-cpu-wide runs/learning-v3-npu-twin

Prints one JSON line per folder (`"bench": "decision_replay"`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from actors.families import dominant_family

SUITE = Path(__file__).resolve().parents[1] / "suites" / "cpu"
MEMORY_PRIOR = (1.0, 2.0)  # memory.memory_prior's default
REPLAYED = ("bare", "kernel-same", "kernel-same+ranked")


def family_of(task: str) -> str:
    found = list(SUITE.glob(f"level*/{task}.py"))
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.decision_replay", description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path, help="v3 results folders (runs/learning-v3-*)")
    args = parser.parse_args(argv)
    for folder in args.folders:
        if not any(folder.glob("arms/eval-*/attempts.jsonl")):
            print(f"{folder}: no arms/eval-*/attempts.jsonl", file=sys.stderr)
            return 2
        print(json.dumps(replay(folder)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
