"""bench/decision_replay.py on a small v3-shaped folder: drafts classified by what their prompt
held, the decision's option per family, and its estimate."""

from __future__ import annotations

import json
from pathlib import Path

from bench.decision_replay import option_of, replay

API = {"id": "core", "kind": "api", "task": None, "q": 0.3, "role": "api"}


def draft(task: str, feasible: bool, *shown: dict) -> dict:
    return {"task": task, "stage": "draft", "reward": 1.0 if feasible else -1.0, "feasible": feasible,
            "shown": [API, *shown]}


def kernel_of(task: str, role: str = "example") -> dict:
    return {"id": f"k-{task}", "kind": "trace", "task": task, "q": 0.2, "role": role}


def write(folder: Path, arm: str, drafts: list[dict]) -> None:
    path = folder / "arms" / f"eval-{arm}-d0" / "attempts.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in drafts))


def test_options_are_read_from_what_the_prompt_showed():
    assert option_of(draft("7_Sigmoid", True)) == "bare"
    assert option_of(draft("7_Sigmoid", True, kernel_of("45_ReLU6"))) == "kernel-same"
    assert option_of(draft("16_MaxOverDim", True, kernel_of("45_ReLU6"), kernel_of("4_ReLU", "context"))) == (
        "kernel-cross+ranked")
    assert option_of(draft("7_Sigmoid", True, kernel_of("4_ReLU", "context"))) == "generic+ranked"


def test_a_pinned_item_is_read_under_its_old_role_too():
    """v3's and v4's logs name the pinned slot item's role `template`; later logs `pinned`."""
    fragment = {"id": "bundle-f", "kind": "api", "task": None, "q": 0.5}
    assert option_of(draft("7_Sigmoid", True, fragment | {"role": "template"})) == "pinned"
    assert option_of(draft("7_Sigmoid", True, fragment | {"role": "pinned"})) == "pinned"
    assert option_of(draft("7_Sigmoid", True, fragment | {"role": "template"}, kernel_of("4_ReLU", "context"))) == (
        "pinned+ranked")


def test_the_decision_keeps_bare_where_memory_did_worse_and_a_kernel_where_it_did_better(tmp_path):
    write(tmp_path, "none", [draft("7_Sigmoid", i < 6) for i in range(10)] + [draft("24_SquareMatmul", False)] * 10)
    write(tmp_path, "value", [draft("7_Sigmoid", i < 1, kernel_of("45_ReLU6")) for i in range(10)]
          + [draft("24_SquareMatmul", i < 5, kernel_of("25_RectMatmul")) for i in range(10)]
          + [draft("24_SquareMatmul", False, kernel_of("45_ReLU6"))] * 5)  # another family's: not replayed
    result = replay(tmp_path)
    assert result["families"]["elementwise"]["option"] == "bare"
    assert result["families"]["matmul"]["option"] == "kernel-same"
    assert result["pass1_none"] == 0.3 and result["pass1_decision_estimate"] == (0.6 + 0.5) / 2
