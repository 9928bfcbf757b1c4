"""An Ascend user's first look across shapes (issue 64, point 6): the main job on three operators
of three shapes (elementwise, a reduction over a given dim, a matmul), a fresh bank each time,
four iterations each, for several seeds. The target: feasible kernels for at least 2 of the 3
operators in at least 3 of 4 seeds.

    python -m bench.first_look [--backend npu-twin] [--seeds 0,1,2,3] [--out runs/first-look]
        [-- EXTRA evokernel run FLAGS]

Each seed is one `evokernel run` (the local model unless --llm-base-url is among the extra flags)
with `local_llm.seed`, `llm.seed` and `memory.seed` set to the seed, into `OUT/seed-<s>/` (its bank
and its run folder). A seed whose run finished is read, not run again; one cut short continues
with `--resume`. Prints one JSON line: the feasible operators per seed and whether the target held.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[1]
TASKS = "4_ReLU.py,14_SumOverDim.py,24_SquareMatmul.py"
ITERATIONS = 4
NEEDED_OPERATORS, NEEDED_SEEDS = 2, 3  # of 3 operators, of 4 seeds


def finished_summary(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / "summary.json"
    if not path.is_file():
        return None
    summary = json.loads(path.read_text())
    return summary if summary.get("finished_at") and not summary.get("interrupted") else None


def run_seed(seed: int, out: Path, backend: str, extra: list[str]) -> dict[str, Any]:
    """The seed's run (continued where it stopped); its summary.json."""
    folder = out / f"seed-{seed}"
    run_dir, bank = folder / "run", folder / "bank"
    if (summary := finished_summary(run_dir)) is not None:
        return summary
    folder.mkdir(parents=True, exist_ok=True)
    seeds = ["--set", f"local_llm.seed={seed}", "--set", f"llm.seed={seed}", "--set", f"memory.seed={seed}"]
    if (run_dir / "summary.json").is_file():
        command = ["run", "--resume", str(run_dir)]
    else:
        command = ["run", "--backend", backend, "--tasks", TASKS, "--iterations", str(ITERATIONS),
                   "--memory", str(bank), "--out", str(run_dir)]
    with (folder / "run.log").open("a") as log:
        # the seeds after the command, with the extra flags: a --set of the command's replaces the main parser's
        subprocess.run([sys.executable, "-m", "launch.cli", *command, *seeds, *extra], cwd=REPOSITORY, stdout=log,
                       stderr=subprocess.STDOUT, check=False)
    summary = finished_summary(run_dir)
    if summary is None:
        raise SystemExit(f"bench.first_look: seed {seed} did not finish (see {folder / 'run.log'}); run again to continue")
    return summary


def figures(summaries: dict[int, dict[str, Any]], backend: str) -> dict[str, Any]:
    feasible = {seed: sorted(op["task"] for op in summary["operators"] if op.get("feasible"))
                for seed, summary in summaries.items()}
    enough = [seed for seed, tasks in feasible.items() if len(tasks) >= NEEDED_OPERATORS]
    return {"bench": "first_look", "backend": backend, "tasks": TASKS.split(","), "iterations": ITERATIONS,
            "seeds": sorted(summaries), "feasible_per_seed": {str(s): t for s, t in sorted(feasible.items())},
            "seeds_with_2_of_3": len(enough), "target_met": len(enough) >= NEEDED_SEEDS and len(summaries) >= 4}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(prog="python -m bench.first_look", description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="npu-twin")
    parser.add_argument("--seeds", default="0,1,2,3", help="comma-separated")
    parser.add_argument("--out", type=Path, default=Path("runs/first-look"))
    args = parser.parse_args(argv)
    out = args.out.resolve()
    summaries = {seed: run_seed(seed, out, args.backend, extra) for seed in map(int, args.seeds.split(","))}
    line = figures(summaries, args.backend)
    (out / "summary.json").write_text(json.dumps(line, indent=1) + "\n")
    print(json.dumps(line))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
