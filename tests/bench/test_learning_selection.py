"""Operator selection of the learning benchmark: families, curriculum order, replicate orders."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from bench.learning_selection import (
    FAMILIES,
    LEVEL2,
    choose,
    curriculum,
    family,
    pool_globs,
    rates_from,
    replicate_order,
    resolve,
)
from launch.campaign import default_suite

SUITE = Path("/suite")


def paths(*stems: str) -> list[Path]:
    return [SUITE / ("level2" if stem in {s.split("/")[-1] for s in LEVEL2} else "level1") / f"{stem}.py"
            for stem in stems]


def stems(chosen: list[Path]) -> list[str]:
    return [p.stem for p in chosen]


def test_the_pool_resolves_in_the_bundled_suite_in_family_order():
    pool = resolve(default_suite(), pool_globs())
    assert len(pool) == len(pool_globs())  # every listed operator exists
    assert stems(pool)[:2] == ["4_ReLU", "7_Sigmoid"] and pool[-1].parent.name == "level2"
    assert family(pool[0]) == "elementwise" and family(pool[-1]) == "level2"
    assert all(family(p) != "other" for p in pool)


def test_a_family_with_a_solved_member_comes_first_easy_member_leading():
    pool = paths("4_ReLU", "7_Sigmoid", "5_GELU", "14_SumOverDim", "15_MeanOverDim", "1_GemmBiasReLU",
                 "2_GemmGELUScale")
    rates = {"4_ReLU": 0.0, "7_Sigmoid": 1.0, "5_GELU": 0.0, "14_SumOverDim": 0.0, "15_MeanOverDim": 0.0,
             "1_GemmBiasReLU": 0.0, "2_GemmGELUScale": 0.0}
    chosen, easy = choose(pool, rates, 6)
    # elementwise has a solved member (Sigmoid): it leads its family, then the failed ones
    assert stems(chosen) == ["7_Sigmoid", "4_ReLU", "14_SumOverDim", "15_MeanOverDim", "1_GemmBiasReLU",
                             "2_GemmGELUScale"]
    assert easy == ["7_Sigmoid"]


def test_families_take_turns_two_members_at_a_time():
    pool = paths(*FAMILIES["reduction"], *FAMILIES["scan"], "1_GemmBiasReLU")
    rates = {p.stem: 0.0 for p in pool}
    chosen, easy = choose(pool, rates, 6)
    # two each, then a third from the first family; each family's members stay together
    assert stems(chosen) == ["14_SumOverDim", "15_MeanOverDim", "16_MaxOverDim", "37_Cumsum", "39_ReverseCumsum",
                             "1_GemmBiasReLU"]
    assert easy == []


def test_a_family_the_cold_model_fully_solves_has_nothing_to_learn():
    pool = paths("4_ReLU", "7_Sigmoid", "14_SumOverDim", "15_MeanOverDim", "1_GemmBiasReLU")
    rates = {"4_ReLU": 1.0, "7_Sigmoid": 0.5, "14_SumOverDim": 0.0, "15_MeanOverDim": 1.0, "1_GemmBiasReLU": 0.0}
    chosen, easy = choose(pool, rates, 3)
    assert stems(chosen) == ["15_MeanOverDim", "14_SumOverDim", "1_GemmBiasReLU"]
    assert easy == ["15_MeanOverDim"]


def test_a_third_level2_failed_ones_first_and_missing_operators_left_out():
    pool = paths("14_SumOverDim", "15_MeanOverDim", "16_MaxOverDim", "17_ArgmaxOverDim", "1_GemmBiasReLU",
                 "2_GemmGELUScale", "13_MLPReLU")
    rates = {"14_SumOverDim": 0.0, "15_MeanOverDim": 0.0, "16_MaxOverDim": 0.0, "1_GemmBiasReLU": 1.0,
             "2_GemmGELUScale": 0.0, "13_MLPReLU": 0.0}  # 17_Argmax did not load
    chosen, _ = choose(pool, rates, 6)
    assert stems(chosen) == ["14_SumOverDim", "15_MeanOverDim", "16_MaxOverDim", "2_GemmGELUScale", "13_MLPReLU",
                             "1_GemmBiasReLU"]  # too few level-1 operators: level 2 fills up, failed first


def test_rates_come_from_the_first_pass_rows():
    rows = {"a": SimpleNamespace(attempts=2, failures={"compile": 1}, error=None),
            "b": SimpleNamespace(attempts=1, failures={"compile": 1}, error=None),
            "c": SimpleNamespace(attempts=0, failures={}, error="task load: bad file")}
    assert rates_from(rows) == {"a": 0.5, "b": 0.0}


def test_given_tasks_are_grouped_by_family_level2_last():
    tasks = paths("1_GemmBiasReLU", "14_SumOverDim", "4_ReLU", "15_MeanOverDim", "5_GELU")
    assert stems(curriculum(tasks)) == ["14_SumOverDim", "15_MeanOverDim", "4_ReLU", "5_GELU", "1_GemmBiasReLU"]


def test_replicates_shuffle_families_and_hard_members_but_keep_the_curriculum_shape():
    tasks = paths("7_Sigmoid", "4_ReLU", "5_GELU", "10_HardSwish", "14_SumOverDim", "15_MeanOverDim",
                  "16_MaxOverDim", "37_Cumsum", "38_Cumprod", "1_GemmBiasReLU", "2_GemmGELUScale", "13_MLPReLU")
    assert replicate_order(tasks, 0, seed=0) == tasks
    orders = [replicate_order(tasks, r, seed=0) for r in range(1, 6)]
    assert replicate_order(tasks, 1, seed=0) == orders[0]  # seeded
    assert replicate_order(tasks, 1, seed=1) != orders[0] or replicate_order(tasks, 2, seed=1) != orders[1]
    assert len({tuple(stems(o)) for o in orders}) > 1
    for order in orders:
        assert sorted(order) == sorted(tasks)
        assert {family(p) for p in order[-3:]} == {"level2"}
        firsts = {}
        for p in order:
            firsts.setdefault(family(p), p.stem)
        assert firsts["elementwise"] == "7_Sigmoid" and firsts["reduction"] == "14_SumOverDim"
        families = [family(p) for p in order]
        assert families == sorted(families, key=families.index)  # each family stays contiguous
