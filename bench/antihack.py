"""Anti-hack gate benchmark: how long the static checks take per candidate, and how they
score on the test candidates (good ones must be clean, hostile ones marked `hack` rejected,
the others left to the dynamic gates).

    python bench/antihack.py [--repeat N]

A human summary on stderr, one JSON line on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from npu_pool.antihack import check_kernel_source, check_python_candidate, summarise  # noqa: E402

TESTS = ROOT / "tests" / "npu_pool"


def _check(path: Path) -> list:
    source = path.read_text()
    return check_python_candidate(source) if path.suffix == ".py" else check_kernel_source(source, "cpp")


def _expected_gate(path: Path) -> str | None:
    for line in path.read_text().splitlines()[:4]:
        if "expect-gate:" in line:
            return line.split("expect-gate:", 1)[1].strip()
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="timed passes over every file (default 20)")
    args = parser.parse_args()
    good = sorted(p for folder in TESTS.glob("candidates/good*") for p in folder.iterdir() if p.suffix in (".py", ".cpp"))
    hostile = sorted(p for p in (TESTS / "hostile").iterdir() if p.suffix in (".py", ".cpp"))
    files = good + hostile
    for path in files:  # warm-up: imports and the lazily built name tables
        _check(path)
    per_file: dict[str, list[float]] = {p.name: [] for p in files}
    for _ in range(max(1, args.repeat)):
        for path in files:
            start = time.perf_counter()
            _check(path)
            per_file[path.name].append((time.perf_counter() - start) * 1e3)
    medians = sorted(statistics.median(v) for v in per_file.values())
    python_ms = [statistics.median(per_file[p.name]) for p in files if p.suffix == ".py"]
    kernel_ms = [statistics.median(per_file[p.name]) for p in files if p.suffix != ".py"]
    false_positives = [p.name for p in good if _check(p)]
    static_hostile = [p for p in hostile if _expected_gate(p) == "hack"]
    missed = [p.name for p in static_hostile if not summarise(_check(p))[0]]
    over_rejected = [p.name for p in hostile if _expected_gate(p) != "hack" and summarise(_check(p))[0]]
    result = {
        "bench": "antihack",
        "files": len(files),
        "median_ms_modelnew": round(statistics.median(python_ms), 3),
        "median_ms_kernel": round(statistics.median(kernel_ms), 3),
        "p95_ms": round(medians[int(0.95 * (len(medians) - 1))], 3),
        "max_ms": round(medians[-1], 3),
        "good_candidates": len(good),
        "good_with_findings": len(false_positives),
        "hostile_static": len(static_hostile),
        "hostile_static_missed": len(missed),
        "hostile_dynamic_rejected_statically": len(over_rejected),
    }
    print(f"anti-hack static checks over {len(files)} candidates, {args.repeat} passes", file=sys.stderr)
    print(f"  median per ModelNew file {result['median_ms_modelnew']} ms, per kernel source {result['median_ms_kernel']} ms, "
          f"p95 {result['p95_ms']} ms, max {result['max_ms']} ms", file=sys.stderr)
    print(f"  good candidates with findings: {false_positives or 'none'}", file=sys.stderr)
    print(f"  hostile (static) missed: {missed or 'none'}; dynamic ones rejected statically: {over_rejected or 'none'}", file=sys.stderr)
    print(json.dumps(result))
    return 1 if false_positives or missed or over_rejected else 0


if __name__ == "__main__":
    raise SystemExit(main())
