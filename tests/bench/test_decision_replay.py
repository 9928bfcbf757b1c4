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


# -- v4 (issue 54.5): the decision as it is now, on v4's published raw state --------------------

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"
V4 = {"cpu": "2026-12-02-qwen2.5-coder-1.5b-instruct-v4-cpu", "npu-twin": "2026-12-02-qwen2.5-coder-1.5b-instruct-v4-npu-twin"}
NEEDED = ["plan.json", "screening.json", "cold_rates.json", "arms/eval-*/attempts.jsonl", "banks/learn-value/*"]


def test_v4_options_are_read_from_what_the_prompt_showed():
    from bench.decision_replay import logged_option

    example = {"id": "bundle-e", "kind": "api", "task": None, "q": 0.3, "role": "pinned"}
    practice = {"id": "p", "kind": "practice", "task": None, "q": 0.3, "role": "context"}
    assert logged_option(draft("7_Sigmoid", True)) == "bare"
    assert logged_option(draft("82_RowSum", False, example, practice)) == "example+ranked"
    assert logged_option(draft("82_RowSum", False, {**example, "role": "example"})) == "example"
    assert logged_option(draft("27_MatVec", True, kernel_of("25_RectMatmul"))) == "kernels"


def test_the_decision_replayed_on_v4_keeps_bare_on_every_held_out_operator(tmp_path):
    """Issue 54.1's rule on v4's frozen banks: no memory option has a fresh success, so none
    displaces bare; in C the estimate is the none arm's 58.3% (v4's value: 42.2%), on the twin 0%
    (v4's value showed the scan example and passed 38_Cumprod 4 of 8: without a fresh success in
    the learning pass, the decision no longer shows it)."""
    from bench.decision_replay import replay_v4
    from bench.learning.archive import unpack

    for backend, run in V4.items():
        folder = tmp_path / backend
        unpack(RESULTS / run, folder, only=NEEDED)
        result = replay_v4(folder)
        assert result["operators"] == 24 and result["unlogged"] == []
        assert all(set(family["chosen"]) == {"bare"} for family in result["families"].values()), result
        assert result["pass1_decision_estimate"] == result["pass1_none"]
        assert (result["pass1_none"], result["pass1_value"]) == ({"cpu": (0.583, 0.422), "npu-twin": (0.0, 0.021)}[backend])


def test_on_v5s_c_half_the_replay_reproduces_bare_everywhere_and_says_what_kept_it(tmp_path, capsys):
    """v5's evaluation ran this decision: replayed on its frozen value bank it chooses bare for all
    24 operators as the run did. The elementwise rung had one fresh success in two drafts, enough
    for a posterior mean above bare's on some operators but not to put its expected cost under
    slot_max_loss; every other family's memory options were untried."""
    from bench.decision_replay import main, replay_v4
    from bench.learning.archive import unpack

    folder = tmp_path / "cpu"
    unpack(RESULTS / "2026-12-04-qwen2.5-coder-1.5b-instruct-v5-cpu", folder, only=NEEDED)
    result = replay_v4(folder)
    assert result["design"] == "v5" and result["operators"] == 24 and result["unlogged"] == []
    assert (result["pass1_none"], result["pass1_value"], result["pass1_decision_estimate"]) == (0.583, 0.589, 0.583)
    families = result["families"]
    assert all(set(family["chosen"]) == {"bare"} for family in families.values()), families
    assert families["elementwise"]["fresh_record"] == {"rung": [1, 2]}
    assert families["row_reduction"]["fresh_record"] == {"bare": [0, 2]}
    assert 0 < families["elementwise"]["memory_above_bare"] == families["elementwise"]["kept_bare_by_max_loss"]
    assert families["matmul"]["memory_above_bare"] == 0  # untried options start at bare's posterior: a tie
    assert main([str(folder)]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["design"] == "v5"


def test_on_v5s_twin_half_the_replay_lists_each_tasks_own_options_and_reproduces_every_choice(tmp_path):
    """The twin's frozen value bank had the elementwise rung at 1 of 2 fresh drafts, and bare's
    prior is near zero there (the held-out operators' screening: 0 of 3): the rung is shown to the
    three elementwise operators its signature maps onto, not to 9_LeakyReLU (a constructor-given
    slope: the rung has no such argument, so its brief offers no rung and the run logged bare).
    The softmax rung's one fresh draft failed: bare there, as everywhere else."""
    from bench.decision_replay import replay_v4
    from bench.learning.archive import unpack

    folder = tmp_path / "npu-twin"
    unpack(RESULTS / "2026-12-04-qwen2.5-coder-1.5b-instruct-v5-npu-twin", folder, only=NEEDED)
    result = replay_v4(folder)
    assert result["unlogged"] == [] and result["operators"] == 24
    assert (result["pass1_none"], result["pass1_value"], result["pass1_decision_estimate"]) == (0.0, 0.026, 0.026)
    families = result["families"]
    assert families["elementwise"]["chosen"] == {"rung": 3, "bare": 1}
    assert families["elementwise"]["fresh_record"] == {"bare": [0, 1], "rung": [1, 2]}
    assert families["softmax_norm"]["fresh_record"] == {"rung": [0, 1]}
    assert all(set(family["chosen"]) == {"bare"} for name, family in families.items() if name != "elementwise")
