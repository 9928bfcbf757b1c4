"""The learning benchmark v3's pre-registered rules and statistics, without a model: the band,
stage 2, the held-out split and curriculum, the bootstrap, the power simulation, the read-only port."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bench.learning import power
from bench.learning.cli import main
from bench.learning.evaluation import ReadOnlyMemory
from bench.learning.learning_pass import LearningBenchmark
from bench.learning.plan import (
    FAMILIES,
    WIDE_ADDITIONS,
    Rule,
    check_same_plan,
    family,
    parse_args,
    plan_of,
    pool_globs,
)
from bench.learning.reuse import reusable_screening
from bench.learning.screening import ThinBand, band, screen, screening_progress, split, stage2
from bench.learning.stats import bootstrap_mean
from bench.learning.summary import compare, evaluate

SUITE = Path(__file__).resolve().parents[3] / "suites" / "cpu" / "level1"


def paths(*stems: str) -> list[Path]:
    return [SUITE / f"{stem}.py" for stem in stems]


def test_the_pool_is_the_families_in_order_and_every_member_is_in_the_suite():
    pool = pool_globs()
    assert len(pool) == len(set(pool)) == 50 and pool[:3] == ["4_ReLU", "7_Sigmoid", "9_LeakyReLU"]
    assert all((SUITE / f"{stem}.py").is_file() for stem in pool)
    assert family(SUITE / "51_VecMat.py") == "matmul" and family(SUITE / "64_Cummax.py") == "scan"
    assert set(FAMILIES) == {"elementwise", "reduction", "softmax_norm", "matmul", "window", "scan"}


def test_the_wide_pool_appends_the_near_copies_to_their_families_and_keeps_the_v3_order():
    narrow, wide = pool_globs(), pool_globs(wide=True)
    assert len(wide) == len(set(wide)) == 50 + sum(len(v) for v in WIDE_ADDITIONS.values()) == 81
    assert [stem for stem in wide if stem in narrow] == narrow  # the v3 pool, in its order
    assert all((SUITE / f"{stem}.py").is_file() for stem in wide)
    # family by family: the additions right after their family's v3 members
    assert wide[wide.index("50_SELU") + 1] == "6_SiLU" and wide[wide.index("58_L1NormOverDim") + 1] == "77_MaxOverLastDim"
    assert family(SUITE / "8_Tanh.py") == "elementwise" and family(SUITE / "83_RowMean.py") == "reduction"
    assert family(SUITE / "91_OuterProduct.py") == "matmul"
    assert set(WIDE_ADDITIONS) <= set(FAMILIES)


def _folder(root: Path, **plan) -> Path:
    import json

    root.mkdir(parents=True)
    recorded = {"design": "v3", "backend": "cpu", "suite": "suites/cpu", "seed": 0,
                "rule": {"drafts": 3, "extra_drafts": 3, "floor_admitted": False}} | plan
    (root / "plan.json").write_text(json.dumps(recorded))
    return root


def test_an_earlier_folder_lends_its_drafts_only_when_its_plan_drew_them_the_same_way(tmp_path):
    plan = plan_of(parse_args(["--backend", "cpu", "--wide-pool"]))
    assert reusable_screening(_folder(tmp_path / "same"), plan, 0) == {}  # no pass finished there yet
    for name, change in {"backend": {"backend": "npu-twin"}, "seed": {"seed": 1}, "suite": {"suite": "elsewhere"},
                         "rule.drafts": {"rule": {"drafts": 2, "extra_drafts": 2, "floor_admitted": False}},
                         "design": {"design": "v2"}}.items():
        with pytest.raises(SystemExit, match=f"not this plan's: {name} "):
            reusable_screening(_folder(tmp_path / name, **change), plan, 0)
    with pytest.raises(SystemExit, match="no plan.json"):
        reusable_screening(tmp_path / "nothing", plan, 0)
    with pytest.raises(SystemExit, match="not both"):
        plan_of(parse_args(["--backend", "cpu", "--wide-pool", "--pool", "4_ReLU"]))


def test_the_band_is_solved_sometimes_and_the_floor_only_where_the_domain_admits_it():
    cpu, twin = Rule(), Rule(floor_admitted=True)
    assert [cpu.in_band(s, 3) for s in range(4)] == [False, True, True, False]
    assert [twin.in_band(s, 3) for s in range(4)] == [True, True, True, False]
    assert [cpu.in_band(s, 6) for s in range(7)] == [False, True, True, True, True, True, False]
    outcomes = {"a": [True, False, False], "b": [True] * 3, "c": [False] * 3, "d": [], "e": [False, True, True]}
    assert band(outcomes, cpu) == ["a", "e"] and band(outcomes, twin) == ["a", "c", "e"]


def test_stage_2_gives_borderline_operators_more_drafts_only_when_the_band_is_thin():
    pool = paths("4_ReLU", "7_Sigmoid", "5_GELU", "24_SquareMatmul", "14_SumOverDim")
    outcomes = {"4_ReLU": [True] * 3, "7_Sigmoid": [True, False, False], "5_GELU": [False] * 3,
                "24_SquareMatmul": [False] * 3, "14_SumOverDim": [False] * 3}
    # elementwise solved something: its ceiling and floor members are borderline; the matmul and
    # reduction members, in families never solved, are not
    assert [p.stem for p in stage2(pool, outcomes, Rule())] == ["4_ReLU", "5_GELU"]
    assert stage2(pool, outcomes, Rule(target=1)) == []  # the band is big enough


def test_the_split_reserves_a_band_member_where_a_family_has_no_solved_member_and_caps_both_sets():
    pool = paths("4_ReLU", "7_Sigmoid", "9_LeakyReLU", "5_GELU", "24_SquareMatmul", "25_RectMatmul",
                 "27_MatVec", "29_MatmulScaled", "14_SumOverDim", "15_MeanOverDim")
    o = {"4_ReLU": [True] * 3, "7_Sigmoid": [True, False, True], "9_LeakyReLU": [False, True, False],
         "5_GELU": [False] * 3, "24_SquareMatmul": [False, True, False], "25_RectMatmul": [True, True, False],
         "27_MatVec": [True, False, False], "29_MatmulScaled": [False] * 3, "14_SumOverDim": [False] * 3,
         "15_MeanOverDim": []}  # did not load: no evidence
    held, curriculum = split(pool, o, Rule())
    # elementwise has a ceiling member (ReLU): both band members held out; matmul has none: its
    # first band member (SquareMatmul) goes to the curriculum; one family at a time
    assert [p.stem for p in held] == ["7_Sigmoid", "25_RectMatmul", "9_LeakyReLU", "27_MatVec"]
    assert [p.stem for p in curriculum] == ["4_ReLU", "5_GELU", "24_SquareMatmul", "29_MatmulScaled",
                                            "14_SumOverDim"]
    assert not set(held) & set(curriculum)
    held2, curriculum2 = split(pool, o, Rule(max_heldout=2, max_curriculum=3))
    assert [p.stem for p in held2] == ["7_Sigmoid", "25_RectMatmul"]
    # the overflow joins the curriculum, which takes one family at a time up to its cap
    assert [p.stem for p in curriculum2] == ["4_ReLU", "24_SquareMatmul", "14_SumOverDim"]
    assert split(pool, o, Rule()) == (held, curriculum)  # a pure function: a resume chooses the same


def test_in_the_twin_domain_never_solved_operators_are_in_the_band():
    pool = paths("4_ReLU", "7_Sigmoid", "5_GELU")
    held, curriculum = split(pool, {s.stem: [False] * 3 for s in pool}, Rule(floor_admitted=True))
    assert [p.stem for p in held] == ["7_Sigmoid", "5_GELU"] and [p.stem for p in curriculum] == ["4_ReLU"]


def test_the_bootstrap_is_seeded_and_brackets_the_mean():
    values = [0.0, 0.125, 0.5, 0.5, 0.875, 1.0, 0.25, 0.375]
    low, high = bootstrap_mean(values)
    assert low < sum(values) / len(values) < high and bootstrap_mean(values) == (low, high)
    assert bootstrap_mean([0.5] * 5) == (0.5, 0.5) and bootstrap_mean([]) is None


def test_the_primary_comparison_and_its_verdict():
    treated = {"pass1_by_operator": {f"op{i}": 0.5 + 0.05 * (i % 4) for i in range(10)}, "compile_errors": 2}
    baseline = {"pass1_by_operator": {f"op{i}": 0.25 for i in range(10)}, "compile_errors": 5}
    test = compare(treated, baseline)
    assert test["wins"] == 10 and test["p_wilcoxon"] == pytest.approx(2 / 1024, abs=1e-6)
    assert test["mean_difference_ci95_bootstrap"][0] > 0.15
    tests, verdict = evaluate("cpu", {"value": treated, "similarity": baseline, "none": baseline})
    assert set(tests) == {"value_vs_similarity", "value_vs_none", "similarity_vs_none"}
    assert verdict["primary"] == "value_vs_similarity" and verdict["significant"] and verdict["target_met"]
    assert verdict["compile_errors_treated_le_none"]
    _, twin = evaluate("npu-twin", {"value": treated, "none": baseline})
    assert twin["primary"] == "value_vs_none" and twin["difference"] == pytest.approx(0.315) and twin["target_met"]
    smaller = {"pass1_by_operator": {t: v - 0.2 for t, v in treated["pass1_by_operator"].items()}, "compile_errors": 9}
    _, short = evaluate("npu-twin", {"value": smaller, "none": baseline})
    assert short["significant"] and not short["target_met"] and not short["compile_errors_treated_le_none"]


def test_the_power_simulation_holds_its_size_and_sees_large_effects():
    assert power.power(20, 6, 0.0, spread=0.0, sims=400) <= 0.06  # false positives near alpha / 2
    assert power.power(20, 8, 0.5, spread=0.0, sims=200) >= 0.95
    small, large = power.power(12, 6, 0.15, sims=400), power.power(24, 8, 0.15, sims=400)
    assert small < large  # more operators and drafts, more power


def test_the_read_only_port_answers_reads_drops_writes_and_refuses_the_unknown():
    class Port:
        async def retrieve(self, request):
            return ("retrieved", request)

        async def add(self, items):
            raise AssertionError("a frozen bank's add reached the bank")

    from memory_actor.items import MemoryItem

    port = ReadOnlyMemory(Port())
    item = MemoryItem(kind="practice", backend="cpu", content="x")
    assert asyncio.run(port.retrieve("r")) == ("retrieved", "r")
    assert asyncio.run(port.add([item])) == [item.id] and asyncio.run(port.update(object())) is None
    assert port.dropped == {"add": 1, "update": 1}
    with pytest.raises(AttributeError, match="frozen bank"):
        port.record_slot_outcome  # noqa: B018 - a write the port does not know must not pass


def test_the_dry_run_prints_the_plan_of_each_domain_at_the_measured_rate(capsys):
    import json

    assert main(["--dry-run", "--backend", "cpu"]) == 0
    cpu = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert cpu["design"] == "v3" and cpu["primary"] == "value_vs_similarity" and not cpu["rule"]["floor_admitted"]
    # 50 x 3 screening drafts, 3 arms x 12 x 6 learning attempts, 3 arms x 24 x 8 evaluation drafts, at 85 s
    assert (cpu["screening_attempts"], cpu["learning_attempts_max"], cpu["evaluation_attempts_max"]) == (150, 216, 576)
    assert cpu["attempts"] == 942 and cpu["estimated_s"] == 942 * 85 and cpu["estimated_s_at_66"] == 942 * 66
    assert main(["--dry-run", "--backend", "npu-twin", "--eval-drafts", "6"]) == 0
    twin = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert twin["primary"] == "value_vs_none" and twin["rule"]["floor_admitted"] and twin["evaluation_attempts_max"] == 432


def _finished_passes(folder: Path, feasible: dict[int, dict[str, bool]]) -> None:
    """Finished screening passes of `folder` (pass r -> operator -> feasible) and its seeded
    bank marked done: what a screening leaves, without a model."""
    import json

    from actors.messages import EpisodeResult

    for r, outcomes in feasible.items():
        run = folder / "arms" / f"screen-d{r}"
        run.mkdir(parents=True)
        operators = [EpisodeResult(task=t, feasible=f, attempts=1).model_dump() for t, f in outcomes.items()]
        (run / "summary.json").write_text(json.dumps({"run_id": f"s{r}", "finished_at": "2026-11-27T00:00:00+00:00",
                                                      "operators": operators}))
    (folder / "banks" / "seeded").mkdir(parents=True, exist_ok=True)
    (folder / "banks" / "seeded.done").touch()


def test_a_thin_band_stops_the_run_with_its_outcomes_kept_and_a_rerun_stops_again(tmp_path):
    import json


    # Finished screening passes stand in for the drafts: ReLU always, Sigmoid once in two,
    # GELU never; stage 2 (the band is under 20) gives ReLU and GELU two more drafts each.
    pool = [Path(f"{stem}.py") for stem in ("4_ReLU", "7_Sigmoid", "5_GELU")]
    _finished_passes(tmp_path, {0: {"4_ReLU": True, "7_Sigmoid": True, "5_GELU": False},
                                1: {"4_ReLU": True, "7_Sigmoid": False, "5_GELU": False},
                                2: {"4_ReLU": True, "5_GELU": False}, 3: {"4_ReLU": True, "5_GELU": False}})
    plan = {"rule": Rule(drafts=2, extra_drafts=2, minimum=2), "pool": pool}
    bench = LearningBenchmark(None, tmp_path)
    with pytest.raises(ThinBand, match="only 1 held-out operators \\(band 1, minimum 2"):
        screen(bench, plan, None, 0)
    kept = json.loads((tmp_path / "screening.json").read_text())
    assert kept["outcomes"] == {"4_ReLU": [True] * 4, "7_Sigmoid": [True, False], "5_GELU": [False] * 4}
    assert kept["heldout"] == ["7_Sigmoid"] and kept["stopped"].startswith("1 held-out operators (band 1)")
    with pytest.raises(ThinBand):  # a rerun stops again rather than learning from too few
        screen(bench, plan, None, 0)


def test_a_new_folder_takes_the_earlier_folders_drafts_and_drafts_only_the_rest(tmp_path):
    """The earlier folder screened ReLU, Sigmoid and GELU (stage 2 for ReLU and GELU); the new
    pool adds Tanh. The new folder's own passes hold Tanh alone (a pass that would draft an
    earlier operator again would be a pass that never finished): its screening is the union."""
    import json


    earlier = tmp_path / "earlier"
    _finished_passes(earlier, {0: {"4_ReLU": True, "7_Sigmoid": True, "5_GELU": False},
                               1: {"4_ReLU": True, "7_Sigmoid": False, "5_GELU": False},
                               2: {"4_ReLU": True, "5_GELU": False}, 3: {"4_ReLU": False, "5_GELU": False}})
    (earlier / "plan.json").write_text(json.dumps({"design": "v3", "backend": "cpu", "suite": "suites/cpu", "seed": 0,
                                                   "rule": {"drafts": 2, "extra_drafts": 2, "floor_admitted": False}}))
    (earlier / "git_commit").write_text("abc123\n")
    new = tmp_path / "new"
    _finished_passes(new, {0: {"8_Tanh": False}, 1: {"8_Tanh": True}})
    from launch.campaign import default_suite

    pool = [default_suite() / "level1" / f"{stem}.py" for stem in ("4_ReLU", "7_Sigmoid", "5_GELU", "8_Tanh")]
    plan = {"backend": "cpu", "suite": default_suite(), "rule": Rule(drafts=2, extra_drafts=2, minimum=3),
            "pool": pool, "reuse": earlier}
    with pytest.raises(ThinBand, match="only 2 held-out"):
        screen(LearningBenchmark(None, new), plan, None, 0)
    kept = json.loads((new / "screening.json").read_text())
    assert kept["outcomes"] == {"4_ReLU": [True, True, True, False], "7_Sigmoid": [True, False],
                                "5_GELU": [False] * 4, "8_Tanh": [False, True]}
    # stage 2 (ReLU and GELU, the elementwise family's borderline members) came from the earlier
    # folder too; ReLU failed once there, so the family reserves it for the curriculum
    assert kept["stage2"] == ["4_ReLU", "5_GELU"] and kept["heldout"] == ["7_Sigmoid", "8_Tanh"]
    assert kept["reused"] == {"from": str(earlier), "started_at_commit": "abc123", "drafts": 10,
                              "passes": {"screen-d0": ["4_ReLU", "5_GELU", "7_Sigmoid"],
                                         "screen-d1": ["4_ReLU", "5_GELU", "7_Sigmoid"],
                                         "screen-d2": ["4_ReLU", "5_GELU"], "screen-d3": ["4_ReLU", "5_GELU"]}}
    assert not (new / "arms" / "screen-d2").exists()  # nothing left to draft in stage 2


def test_an_unfinished_screening_says_where_it_stands(tmp_path, capsys, monkeypatch):
    """--summary-so-far before screening.json exists: per pass, drafted and solved so far, the
    drafts an earlier folder lends in stage 1; nothing is run."""
    import json


    earlier = tmp_path / "earlier"
    _finished_passes(earlier, {0: {"4_ReLU": True, "7_Sigmoid": False}, 1: {"4_ReLU": True, "7_Sigmoid": True}})
    (earlier / "plan.json").write_text(json.dumps({"design": "v3", "backend": "cpu", "suite": "suites/cpu", "seed": 0,
                                                   "rule": {"drafts": 3, "extra_drafts": 3, "floor_admitted": False}}))
    new = tmp_path / "new"
    _finished_passes(new, {0: {"8_Tanh": False, "6_SiLU": True}})
    argv = ["--backend", "cpu", "--wide-pool", "--reuse-screening", str(earlier), "--out", str(new)]
    plan = plan_of(parse_args(argv))
    check_same_plan(new, plan)  # what the run's first start records
    progress = screening_progress(new, plan, 0)
    assert progress["passes"] == {"screen-d0": {"drafted": 2, "feasible": 1, "reused": 2, "reused_feasible": 1},
                                  "screen-d1": {"drafted": 0, "feasible": 0, "reused": 2, "reused_feasible": 2}}
    assert progress["solved_at_least_once"] == ["4_ReLU", "6_SiLU", "7_Sigmoid"] and progress["stage1_drafts"] == 243

    # from outside the repository, with --out alone: the folder's plan.json says the rest
    monkeypatch.chdir(tmp_path)
    assert main(["--out", str(new), "--summary-so-far"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out.strip().splitlines()[-1]) == progress
    assert "screening under way, 6 drafts so far" in captured.err


def test_the_earlier_folder_is_read_once_per_command(tmp_path, monkeypatch, capsys):
    """The estimate and the screening take the earlier folder's drafts from one reading."""
    import bench.learning.reuse as reuse

    earlier = tmp_path / "earlier"
    _finished_passes(earlier, {0: {"4_ReLU": True}})
    (earlier / "plan.json").write_text(json.dumps({"design": "v3", "backend": "cpu", "suite": "suites/cpu", "seed": 0,
                                                   "rule": {"drafts": 3, "extra_drafts": 3, "floor_admitted": False}}))
    reads = []
    real = reuse.reusable_screening
    monkeypatch.setattr(reuse, "reusable_screening", lambda *a: reads.append(a[0]) or real(*a))
    plan = plan_of(parse_args(["--reuse-screening", str(earlier), "--pool", "4_ReLU"]))
    assert reuse.lent_drafts(plan, 0) == {0: {"4_ReLU": True}} and reuse.lent_drafts(plan, 0) is plan["lent"]
    assert main(["--dry-run", "--reuse-screening", str(earlier), "--pool", "4_ReLU"]) == 0
    assert reads == [earlier, earlier]  # once for the plan above, once for the command
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["screening_attempts"] == 2
