"""What the evaluation prompts of a v4 learning-benchmark folder held, and how drafts fared with it.

Each fresh evaluation draft (arms/eval-<arm>-d<r>/attempts.jsonl) is classified by the memory
content its prompt showed beyond the static brief (field `shown`), in the decision's own terms
(memory_actor/slots.py): `bare` (core API items only), `example` (the family's verified example,
a bundle item, as the worked example or pinned), `kernels` (a banked kernel of the task's family
in the slot; `kernels-cross` for another family's, which v4 never shows), each with `+ranked` where
ranked items (role `context`) came along, and `ranked` for ranked items without a slot item.
Drafts the machine failed to judge (gate `infra`) are left out, as pass@1 leaves them out. Each
count is [feasible, drafts, compile errors, drafts without code (gate `no_code`)].

The split is by what the memory chose, so it is confounded with the operator: a description of
the run, not a test (the test is the table's value-vs-none comparison). On a v3 folder `example`
is v3's pinned family fragment (also a bundle item, logged with the role `template`): the split
reproduces v3's published table.

    python -m bench.prompt_split runs/learning-v4-cpu [--markdown]

Prints one JSON line (`"bench": "prompt_split"`), or with --markdown the table for the reading.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from bench.decision_replay import family_of, rung_ids

SLOT_ROLES = ("example", "pinned", "template")  # the worked example, or pinned ("template" in v3's and v4's logs)
ORDER = ("bare", "ranked", "rung", "rung+ranked", "example", "example+ranked", "kernels", "kernels+ranked",
         "kernels-cross", "kernels-cross+ranked")


def option_of(draft: dict) -> str:
    """The memory content of one draft's prompt, in the decision's terms."""
    roles = [shown["role"] for shown in draft["shown"]]
    ranked = "context" in roles
    slot = next((shown for shown in draft["shown"] if shown["role"] in SLOT_ROLES), None)
    if slot is None:
        return "ranked" if ranked else "bare"
    if slot["id"] in rung_ids():
        option = "rung"
    elif slot["id"].startswith("bundle-"):
        option = "example"
    else:
        same = slot.get("task") and family_of(slot["task"]) == family_of(draft["task"])
        option = "kernels" if same else "kernels-cross"
    return option + ("+ranked" if ranked else "")


def split(folder: Path) -> dict:
    """arm -> option -> [feasible, drafts, compile errors, drafts without code], and the same per family."""
    by_option: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0, 0]))
    by_family: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0, 0]))
    for path in sorted(folder.glob("arms/eval-*/attempts.jsonl")):
        arm = path.parent.name.removeprefix("eval-").rsplit("-", 1)[0]
        for line in path.read_text().splitlines():
            try:
                draft = json.loads(line)
            except ValueError:  # a line being written when the folder was copied
                continue
            if draft.get("stage") != "draft" or draft.get("gate") == "infra":
                continue
            option = option_of(draft)
            for record in (by_option[arm][option], by_family[arm][f"{family_of(draft['task'])}/{option}"]):
                record[0] += int(bool(draft["feasible"]))
                record[1] += 1
                record[2] += int(draft.get("gate") == "compile")
                record[3] += int(draft.get("gate") == "no_code")  # the reply held no kernel the extraction takes
    ranked = sorted(by_option, key=lambda arm: (arm != "none", arm))
    return {"bench": "prompt_split", "folder": str(folder),
            "arms": {arm: {o: by_option[arm][o] for o in ORDER if o in by_option[arm]} for arm in ranked},
            "families": {arm: dict(sorted(by_family[arm].items())) for arm in ranked}}


def markdown(result: dict) -> str:
    """The table for the reading: feasible/drafts (rate) per option and arm, with the drafts that did
    not compile and those whose reply held no kernel."""
    arms = list(result["arms"])
    options = [o for o in ORDER if any(o in result["arms"][arm] for arm in arms)]
    lines = ["| what the prompt held beyond the static brief | " + " | ".join(arms) + " |",
             "|---|" + "---|" * len(arms)]
    for option in options:
        cells = []
        for arm in arms:
            feasible, drafts, compile_errors, no_code = result["arms"][arm].get(option, (0, 0, 0, 0))
            errors = f"{compile_errors} compile error{'' if compile_errors == 1 else 's'}"
            cells.append(f"{feasible}/{drafts} ({feasible / drafts:.0%}; {errors}, {no_code} without code)"
                         if drafts else "-")
        lines.append(f"| {option} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.prompt_split", description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a learning-benchmark results folder (runs/learning-v4-*)")
    parser.add_argument("--markdown", action="store_true", help="print the table instead of the JSON line")
    args = parser.parse_args(argv)
    if not any(args.folder.glob("arms/eval-*/attempts.jsonl")):
        print(f"{args.folder}: no arms/eval-*/attempts.jsonl", file=sys.stderr)
        return 2
    result = split(args.folder)
    print(markdown(result) if args.markdown else json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
