"""The default model's measured rates, shipped with the memory (issue 54, point 6).

A user's run has no screening, so on a fresh bank the draft decision (memory_actor/slots.py)
takes its starting evidence from `memory_actor/bundles/measured_rates.yaml`, per backend and
operator family: `rates`, [feasible, drafts] of the default model's fresh drafts shown nothing
beyond the brief (each run's screening over its pool, by the family the decision reads from each
reference: the benchmark's own `cold_rates.json`, bench/learning/screening.py), bare's prior;
and `options`, the fresh first drafts of each run's evaluation arms that showed a memory option
(read from their `shown` field: a bundle example by its declared option, a banked kernel as
`kernels`, `+ranked` with ranked items), evidence that starts that option's record. The model,
the runs and their archives' digests are named in the file. Never edit it by hand; run

    python -m bench.measured_rates bench/results/2026-12-02-qwen2.5-coder-1.5b-instruct-v4-cpu \
        bench/results/2026-12-02-qwen2.5-coder-1.5b-instruct-v4-npu-twin

and `--check` to compare the shipped file with what the runs give (exit 1 when they differ).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

SHIPPED = Path(__file__).resolve().parents[1] / "memory_actor" / "bundles" / "measured_rates.yaml"
HEADER = """\
# The default model's measured rates, from the published benchmark runs named below, per backend
# and operator family: `rates`, [feasible, drafts] of its fresh drafts shown nothing beyond the
# static brief (the screenings: bare's prior), and `options`, of the evaluations' fresh drafts
# that showed a memory option (evidence that starts its record). The draft decision's starting
# evidence on a bank without screening (memory.shipped_rates; memory_actor/slot_values.py).
# Written by `python -m bench.measured_rates` (bench/measured_rates.py): do not edit by hand.
"""


def run_rates(result: Path) -> tuple[str, str, dict[str, list[int]], dict[str, list[int]]]:
    """(model, backend, cold rates, option records) of one published run: its plan, screening (if
    it screened) and evaluation drafts from the archive (digest checked), its model from
    summary.json."""
    from bench.learning.archive import unpack
    from bench.learning.plan import plan_in
    from bench.learning.screening import cold_rates

    meta = json.loads((result / "summary.json").read_text())["meta"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        unpack(result, folder, only=["plan.json", "screening.json", "arms/eval-*/attempts.jsonl"])
        plan = plan_in(folder)
        screened = folder / "screening.json"
        rates = cold_rates(plan, json.loads(screened.read_text()), plan["backend"]) if screened.is_file() else {}
        options = option_records(folder, plan["backend"])
    return meta["model"]["name"], plan["backend"], rates, options


def option_records(folder: Path, backend: str) -> dict[str, list[int]]:
    """[feasible, drafts] of the evaluation's fresh first drafts that showed a memory option, keyed
    backend/family/fresh/option (bare drafts are left to the screening's cold rates)."""
    from bench.decision_replay import family_of, logged_option
    from memory_actor.seeding import bundle_items
    from memory_actor.slots import CROSS_BACKEND

    declared = {item.id: item.tag_values().get("option", "example") for item in bundle_items(backend)
                if "example" in item.tags}
    records: dict[str, list[int]] = {}
    for path in sorted(folder.glob("arms/eval-*/attempts.jsonl")):
        for line in path.read_text().splitlines():
            draft = json.loads(line)
            if draft["stage"] != "draft" or draft["reward"] is None or draft["iteration"] != 1:
                continue
            option = logged_option(draft)
            if option in ("bare", "generic+ranked"):
                continue
            slot = next(s for s in draft["shown"] if s["role"] in ("example", "pinned", "template"))
            if slot["kind"] == "api":  # a bundle example: its declared option (a rung, say)
                option = option.replace("example", declared.get(slot["id"], "example"), 1)
            elif slot.get("task") == draft["task"]:  # the operator's own kernel of another backend (never a
                option = CROSS_BACKEND + ("+ranked" if option.endswith("+ranked") else "")  # banked one's evidence)
            record = records.setdefault(f"{backend}/{family_of(draft['task'])}/fresh/{option}", [0, 0])
            record[0] += int(draft["feasible"])
            record[1] += 1
    return records


def derive(results: list[Path]) -> dict[str, Any]:
    """The shipped file's content from published runs of one model: cold rates from the one run
    per backend that screened, option records summed over every run (a pilot beside a benchmark)."""
    from bench.learning.archive import MANIFEST

    models, rates, options, sources, screened = set(), {}, {}, {}, {}
    for result in results:
        model, backend, found, shown = run_rates(result)
        if found and backend in screened:
            raise SystemExit(f"bench.measured_rates: two screenings for {backend}: {screened[backend]} and {result.name}")
        if found:
            screened[backend] = result.name
        models.add(model)
        sha = json.loads((result / MANIFEST).read_text())["sha256"]
        sources.setdefault(backend, []).append({"run": f"bench/results/{result.name}", "raw_sha256": sha})
        rates |= found
        for key, (s, n) in shown.items():
            total = options.setdefault(key, [0, 0])
            total[0], total[1] = total[0] + s, total[1] + n
    if len(models) != 1:
        raise SystemExit(f"bench.measured_rates: the runs are of different models: {sorted(models)}")
    return {"model": models.pop(), "sources": dict(sorted(sources.items())),
            "rates": {key: list(value) for key, value in sorted(rates.items())},
            "options": {key: list(value) for key, value in sorted(options.items())}}


def render(content: dict[str, Any]) -> str:
    return HEADER + yaml.safe_dump(content, sort_keys=False, default_flow_style=None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.measured_rates", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="published runs (bench/results/<run>): one screening "
                        "per backend, any number of evaluations")
    parser.add_argument("--check", action="store_true", help="compare with the shipped file instead of writing it")
    parser.add_argument("--out", type=Path, default=SHIPPED)
    args = parser.parse_args(argv)
    text = render(derive(args.results))
    if args.check:
        same = args.out.is_file() and args.out.read_text() == text
        print(json.dumps({"bench": "measured_rates", "file": str(args.out), "up_to_date": same}))
        return 0 if same else 1
    args.out.write_text(text)
    print(json.dumps({"bench": "measured_rates", "file": str(args.out), "written": True}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
