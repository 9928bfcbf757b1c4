"""bench/prompt_split.py on a small v4-shaped folder: each evaluation draft classified by the memory
content its prompt showed, counted per arm and option (feasible, drafts, compile errors, drafts without
code)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.prompt_split import main, markdown, option_of, split

API = {"id": "core", "kind": "api", "task": None, "q": 0.3, "role": "api"}
FAMILY_EXAMPLE = {"id": "bundle-0123456789abcdef", "kind": "practice", "task": "ex1_Log1pAbs", "q": 0.0,
                  "role": "example"}


def draft(task: str, feasible: bool, *shown: dict, gate: str | None = None) -> dict:
    return {"task": task, "stage": "draft", "feasible": feasible, "gate": gate or ("ok" if feasible else "correctness"),
            "shown": [API, *shown]}


def kernel_of(task: str, role: str = "example") -> dict:
    return {"id": f"k-{task}", "kind": "trace", "task": task, "q": 0.2, "role": role}


def write(folder: Path, run: str, drafts: list[dict]) -> None:
    path = folder / "arms" / run / "attempts.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in drafts) + '{"task": "cut o')  # a line being written


def test_options_name_the_slot_item_and_the_ranked_items():
    assert option_of(draft("7_Sigmoid", True)) == "bare"
    assert option_of(draft("7_Sigmoid", True, FAMILY_EXAMPLE)) == "example"
    assert option_of(draft("7_Sigmoid", True, FAMILY_EXAMPLE | {"role": "pinned"})) == "example"
    assert option_of(draft("7_Sigmoid", True, FAMILY_EXAMPLE | {"role": "template"})) == "example"  # v3's, v4's logs
    assert option_of(draft("7_Sigmoid", False, kernel_of("45_ReLU6"), kernel_of("4_ReLU", "context"))) == (
        "kernels+ranked")
    assert option_of(draft("16_MaxOverDim", False, kernel_of("45_ReLU6"))) == "kernels-cross"
    assert option_of(draft("7_Sigmoid", False, kernel_of("4_ReLU", "context"))) == "ranked"


def test_a_first_rung_is_its_own_option():
    from memory_actor.seeding import rung_items

    rung = FAMILY_EXAMPLE | {"id": rung_items("npu-twin")["elementwise"].id, "kind": "api"}
    assert option_of(draft("7_Sigmoid", True, rung)) == "rung"
    assert option_of(draft("7_Sigmoid", True, rung | {"role": "pinned"}, kernel_of("4_ReLU", "context"))) == (
        "rung+ranked")


def test_every_shape_s_first_rung_is_a_rung_not_the_family_example():
    # v6's reading first called these "the family's worked example" (rung_ids knew one rung a family)
    from memory_actor.seeding import family_rungs

    shape_rungs = [item for items in family_rungs("npu-twin").values() for item in items[1:]]
    assert {item.task_id for item in shape_rungs} >= {"r11_SoftClip", "r41_MatmulAddConstant", "r54_SumPool2d"}
    for item in shape_rungs:
        shown = FAMILY_EXAMPLE | {"id": item.id, "kind": "api", "task": item.task_id}
        assert option_of(draft("9_LeakyReLU", False, shown)) == "rung"


def test_counts_per_arm_and_option_leave_out_what_the_machine_failed_to_judge(tmp_path, capsys):
    write(tmp_path, "eval-none-d0", [draft("7_Sigmoid", True), draft("24_SquareMatmul", False, gate="compile"),
                                     draft("7_Sigmoid", False, gate="infra")])
    write(tmp_path, "eval-value-d0", [draft("7_Sigmoid", True, kernel_of("45_ReLU6")),
                                      draft("24_SquareMatmul", False, FAMILY_EXAMPLE, gate="compile")])
    write(tmp_path, "eval-value-d1", [draft("7_Sigmoid", False, kernel_of("45_ReLU6")), draft("24_SquareMatmul", True),
                                      draft("24_SquareMatmul", False, gate="no_code")])
    result = split(tmp_path)
    assert result["arms"] == {"none": {"bare": [1, 2, 1, 0]},
                              "value": {"bare": [1, 2, 0, 1], "example": [0, 1, 1, 0], "kernels": [1, 2, 0, 0]}}
    assert result["families"]["value"]["elementwise/kernels"] == [1, 2, 0, 0]
    table = markdown(result)
    assert "| bare | 1/2 (50%; 1 compile error, 0 without code) | 1/2 (50%; 0 compile errors, 1 without code) |" in table
    assert "| example | - | 0/1 (0%; 1 compile error, 0 without code) |" in table
    assert main([str(tmp_path)]) == 0 and json.loads(capsys.readouterr().out)["arms"] == result["arms"]
    assert main([str(tmp_path / "nothing")]) == 2
