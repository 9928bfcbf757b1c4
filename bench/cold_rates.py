"""The default model's measured cold rates, shipped with the memory (issue 54, point 6).

A user's run has no screening, so on a fresh bank the draft decision (memory_actor/slots.py)
takes bare's prior from `memory_actor/bundles/cold_rates.yaml`: per backend and operator family,
[feasible, drafts] of the default model's fresh drafts shown nothing beyond the brief. This
script derives that file from published learning-benchmark runs (bench/results/<run>/): each
run's screening drafts over its pool, by the family the decision reads from each reference (the
same computation as the benchmark's own `cold_rates.json`, bench/learning/screening.py), with
the model, the runs and their archives' digests named in the file. Never edit it by hand; run

    python -m bench.cold_rates bench/results/2026-12-02-qwen2.5-coder-1.5b-instruct-v4-cpu \\
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

SHIPPED = Path(__file__).resolve().parents[1] / "memory_actor" / "bundles" / "cold_rates.yaml"
HEADER = """\
# The default model's measured cold rates: [feasible, drafts] of its fresh drafts shown nothing
# beyond the static brief, per backend and operator family, from the published benchmark
# screenings named below. Bare's prior in the draft decision on a bank without screening
# (memory.shipped_cold_rates; memory_actor/slot_values.py). Written by `python -m bench.cold_rates`
# (bench/cold_rates.py): do not edit by hand.
"""


def run_rates(result: Path) -> tuple[str, str, dict[str, list[int]]]:
    """(model, backend, rates) of one published run: its plan and screening from the archive
    (digest checked), its model from summary.json."""
    from bench.learning.archive import unpack
    from bench.learning.plan import plan_in
    from bench.learning.screening import cold_rates

    meta = json.loads((result / "summary.json").read_text())["meta"]
    with tempfile.TemporaryDirectory() as tmp:
        unpack(result, Path(tmp), only=["plan.json", "screening.json"])
        plan = plan_in(Path(tmp))
        screening = json.loads((Path(tmp) / "screening.json").read_text())
    return meta["model"]["name"], plan["backend"], cold_rates(plan, screening, plan["backend"])


def derive(results: list[Path]) -> dict[str, Any]:
    """The shipped file's content from published runs of one model, one run per backend."""
    from bench.learning.archive import MANIFEST

    models, rates, sources = set(), {}, {}
    for result in results:
        model, backend, found = run_rates(result)
        if backend in sources:
            raise SystemExit(f"bench.cold_rates: two runs for {backend}: {sources[backend]['run']} and {result.name}")
        models.add(model)
        sha = json.loads((result / MANIFEST).read_text())["sha256"]
        sources[backend] = {"run": f"bench/results/{result.name}", "raw_sha256": sha}
        rates |= found
    if len(models) != 1:
        raise SystemExit(f"bench.cold_rates: the runs are of different models: {sorted(models)}")
    return {"model": models.pop(), "sources": dict(sorted(sources.items())),
            "rates": {key: list(value) for key, value in sorted(rates.items())}}


def render(content: dict[str, Any]) -> str:
    return HEADER + yaml.safe_dump(content, sort_keys=False, default_flow_style=None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cold_rates", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="published runs (bench/results/<run>), one per backend")
    parser.add_argument("--check", action="store_true", help="compare with the shipped file instead of writing it")
    parser.add_argument("--out", type=Path, default=SHIPPED)
    args = parser.parse_args(argv)
    text = render(derive(args.results))
    if args.check:
        same = args.out.is_file() and args.out.read_text() == text
        print(json.dumps({"bench": "cold_rates", "file": str(args.out), "up_to_date": same}))
        return 0 if same else 1
    args.out.write_text(text)
    print(json.dumps({"bench": "cold_rates", "file": str(args.out), "written": True}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
