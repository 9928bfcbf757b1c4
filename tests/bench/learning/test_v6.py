"""v6's design (issue 64; bench/learning): v5's screening, held-out operators and curriculum, the
value arm's learning pass drafting each curriculum operator fresh four times from its rung, and
issue 64's targets, the C compile-error allowance among them."""

from __future__ import annotations

from bench.learning.plan import COLD_RATE_DESIGNS, DESIGNS, TARGETS
from bench.learning.screening import V6_FRESH_DRAFTS, arm_episodes
from bench.learning.summary import evaluate


def _arm(pass1: dict[str, float], compile_errors: int) -> dict:
    return {"pass1_by_operator": pass1, "compile_errors": compile_errors}


def test_v6_is_a_design_with_v5s_limits_and_four_fresh_rung_drafts_in_the_value_arms_pass():
    assert "v6" in DESIGNS and "v6" in COLD_RATE_DESIGNS
    assert arm_episodes({"design": "v6", "arms": ["none", "value"]}) == {
        "value": {"start_from_rung": True, "fresh_drafts": 4}} and V6_FRESH_DRAFTS >= 4
    assert arm_episodes({"design": "v6", "arms": ["none"]}) == {}  # none: the static brief, untouched


def test_v6_targets_allow_c_five_more_compile_errors_and_ask_the_twin_for_15_points():
    assert (TARGETS["v6", "npu-twin"].points, TARGETS["v6", "npu-twin"].needs_p) == (0.15, True)
    ops = {f"t{i}": 0.5 for i in range(6)}
    same = {"none": _arm(ops, 20), "value": _arm(ops, 25)}
    _, verdict = evaluate("cpu", same, design="v6")
    assert verdict["compile_errors_treated_le_none"] and verdict["target_met"]  # 25 <= 20 + 5; -0 >= -2 points
    _, verdict = evaluate("cpu", {"none": _arm(ops, 20), "value": _arm(ops, 26)}, design="v6")
    assert not verdict["target_met"]
    _, verdict = evaluate("cpu", {"none": _arm(ops, 20), "value": _arm(ops, 25)}, design="v5")
    assert not verdict["target_met"]  # v5 allowed none


def test_v6_tables_count_distinct_feasible_kernels_and_seeded_drafts(tmp_path):
    """Issue 64.5: equal kernel text is one kernel, whatever pass wrote it; a draft counts as
    seeded where attempts.jsonl recorded its sampling seed."""
    import json

    from bench.learning.summary import distinct_kernels, seeded_drafts

    passes = [tmp_path / f"eval-value-d{r}" for r in range(3)]
    for r, (text, seed) in enumerate([("a", 11), ("a\n", 12), ("b", None)]):
        (passes[r] / "kernels" / "7_Sigmoid").mkdir(parents=True)
        (passes[r] / "kernels" / "7_Sigmoid" / "best.cpp").write_text(text)
        (passes[r] / "attempts.jsonl").write_text(json.dumps({"task": "7_Sigmoid", "sampling_seed": seed}) + "\n")
    assert distinct_kernels(passes) == {"7_Sigmoid": 2}
    assert seeded_drafts(passes) == 2


def test_every_design_keeps_its_learning_pass_volume_without_the_stop_rules():
    """Issue 67's stops (on by default) did not exist when v3-v5 ran; v6 keeps v5's volume too."""
    from bench.learning.cli import design_settings
    from bench.learning.plan import parse_args

    for design in ("v3", "v5", "v6"):
        episode = design_settings(parse_args(["--design", design, "--backend", "cpu"])).episode
        assert (episode.plateau_refinements, episode.uncompiled_drafts) == (0, 0), design


def test_v6_tables_count_the_drafts_shown_a_kernel_the_model_wrote(tmp_path):
    """Issue 64.3: a banked trace in the prompt counts, a ladder item (kind api) does not; only
    held-out operators' drafts."""
    import json

    from bench.learning.summary import shown_own_kernels

    run = tmp_path / "eval-value-d0"
    run.mkdir()
    rows = [{"task": "15_MeanOverDim", "feasible": True, "shown": [{"kind": "trace", "role": "example"}]},
            {"task": "15_MeanOverDim", "feasible": False, "shown": [{"kind": "api", "role": "example"}]},
            {"task": "16_MaxOverDim", "feasible": False, "shown": [{"kind": "trace", "role": "context"},
                                                                     {"kind": "trace", "role": "context"}]},
            {"task": "4_ReLU", "feasible": True, "shown": [{"kind": "trace", "role": "example"}]}]
    (run / "attempts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert shown_own_kernels([run], ["15_MeanOverDim", "16_MaxOverDim"]) == {
        "drafts": 2, "feasible": 1, "by_role": {"context": 2, "example": 1}}
