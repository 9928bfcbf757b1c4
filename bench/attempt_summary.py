"""Publish an attempt-speed comparison (issue 42): `bench/results/attempt-<date>/summary.json`.

Reads the rows `bench.attempt --requests ... --out FILE` wrote for each measurement (a checkout,
one or two operators in flight): `{before,after}_prompts_in_flight_N.jsonl` (prompt only,
`--max-tokens 1 --no-evaluate`) or `{before,after}_attempts_in_flight_N.jsonl` (whole attempts,
judged: they also give the answers' tokens, cuts and feasibility), completed where a measurement
was cut short by `{before,after}_estimate_in_flight_N.jsonl` (`bench.attempt_estimate`, every
figure says its basis), and writes one summary with a `headline`:

- `new_token_share_median`: tokens the server read anew over prompt tokens, the median over the
  replayed prompts (the server's own count). Independent of the machine's load: the main
  evidence on this shared machine.
- `median_attempt_s_cpu`, `median_attempt_s_npu_twin`: the median attempt, per backend, at the
  idle machine's rates: each prompt's measured new tokens at the idle prompt rate, its answer
  tokens at the idle generation rate, plus the measured evaluation (IDLE_RATES: bench.attempt on
  this machine idle, 2026-11-25). Wall seconds on the loaded machine are published beside them
  with the load average, but compare nothing.

Every figure is a list of {"in_flight", "before", "after"}.

    python -m bench.attempt_summary --dir bench/results/attempt-2026-11-28 \
        --before-commit C1 --after-commit C2

`--idle`: this folder's "after" attempts ran on an idle machine, so their wall seconds are the
figure, and "before" (its token rows from `--before-dir`) is timed at the rates those idle
attempts measured, per operators in flight, instead of IDLE_RATES.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from bench.attempt import summarise_by_backend  # noqa: E402

# Idle 2-core machine, the benchmark's prompts (bench/results/attempt-2026-11-25/idle_threads.jsonl):
# prompt tokens and answer tokens per second of wall time, by llama.cpp threads.
IDLE_RATES = {2: {"prompt": 48.0, "generation": 12.8}, 1: {"prompt": 29.0, "generation": 8.3}}
THREADS = {1: 2, 2: 1}  # operators in flight -> threads on this 2-core machine (LocalLLMConfig.threads)
BASIS = {True: "measured: tokens read anew counted by the real server",
         False: "estimated: the server's reuse rule on its own tokens (bench.attempt_estimate)"}
HEADLINE_BACKENDS = {"cpu": "median_attempt_s_cpu", "npu-twin": "median_attempt_s_npu_twin"}
# The v3 learning benchmark's evaluation drafts (576 a backend), made with the layout before issue 42.
BENCHMARK_ATTEMPTS = {"cpu": "runs/learning-v3-cpu-wide/arms/eval-*/attempts.jsonl",
                      "npu-twin": "runs/learning-v3-npu-twin/arms/eval-*/attempts.jsonl"}


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def answers_by_backend(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Answer tokens and evaluation seconds of whole attempts, per backend."""
    out: dict[str, dict[str, Any]] = {}
    for backend in dict.fromkeys(r["backend"] for r in rows):
        mine = [r for r in rows if r["backend"] == backend]
        out[backend] = {"answer_tokens_median": median([r["streamed_tokens"] for r in mine]),
                        "evaluation_s_median": median([r["evaluation_s"] for r in mine if "evaluation_s" in r]),
                        "cut_at_max_tokens": sum(r.get("finish_reason") == "length" for r in mine),
                        "answers": len(mine), "feasible": sum(bool(r.get("feasible")) for r in mine)}
    return out


def benchmark_answers() -> dict[str, dict[str, Any]]:
    """Draft answers of the v3 learning benchmark's evaluation passes (the layout before issue 42)."""
    out = {}
    for backend, pattern in BENCHMARK_ATTEMPTS.items():
        rows = [json.loads(line) for path in sorted(REPOSITORY.glob(pattern))
                for line in path.read_text().splitlines() if line.strip()]
        drafts = [r for r in rows if r["stage"] == "draft"]
        if drafts:
            out[backend] = {"answer_tokens_median": median([r["tokens_completion"] for r in drafts]),
                            "cut_at_max_tokens": sum("max_tokens" in (r.get("reason") or "") for r in drafts),
                            "answers": len(drafts), "feasible": sum(r["feasible"] for r in drafts),
                            "source": pattern}
    return out


def idle_attempt_s(prompts: list[dict[str, Any]], backend: str, in_flight: int, answers: dict[str, Any],
                   evaluation_s: float, rates: dict[str, float] | None = None) -> float | None:
    """The median attempt at the idle machine's rates (see the module's docstring)."""
    rates = rates or IDLE_RATES[THREADS[in_flight]]
    answer = answers.get(backend, {}).get("answer_tokens_median")
    news = [r["prompt_tokens_new"] for r in prompts if r["backend"] == backend]
    if answer is None or not news:
        return None
    return median([n / rates["prompt"] + answer / rates["generation"] + evaluation_s for n in news])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="results folder: {before,after}_{prompts,attempts}_in_flight_N.jsonl")
    parser.add_argument("--before-commit", required=True)
    parser.add_argument("--after-commit", required=True)
    parser.add_argument("--idle", action="store_true", help="the after attempts ran on an idle machine: their wall "
                        "seconds are the figure, and before is timed at their measured rates")
    parser.add_argument("--before-dir", default=None, help="read before_*.jsonl from this folder (default: --dir)")
    args = parser.parse_args(argv)
    folder = Path(args.dir)
    before_folder = Path(args.before_dir) if args.before_dir else folder
    measured_rates: dict[int, dict[str, float]] = {}
    measurements: dict[str, Any] = {}
    headline: dict[str, list[dict[str, Any]]] = {"new_token_share_median": [], **{k: [] for k in HEADLINE_BACKENDS.values()}}
    attempt_files = sorted(folder.glob("after_attempts_in_flight_*.jsonl"))
    answers_after = answers_by_backend([r for path in attempt_files for r in rows_of(path)])
    answers_before = benchmark_answers()
    for in_flight in (1, 2):
        figure: dict[str, Any] = {"in_flight": in_flight}
        per_backend: dict[str, dict[str, Any]] = {b: {"in_flight": in_flight} for b in HEADLINE_BACKENDS}
        for side, answers in (("after", answers_after), ("before", answers_before)):  # after first: its idle rates
            source = before_folder if side == "before" else folder
            measured_rows = next((rows_of(source / f"{side}_{k}_in_flight_{in_flight}.jsonl") for k in ("prompts", "attempts")
                                  if (source / f"{side}_{k}_in_flight_{in_flight}.jsonl").exists()), [])
            estimated = rows_of(source / f"{side}_estimate_in_flight_{in_flight}.jsonl")
            # a measurement cut short (the busy machine) is completed, prompt by prompt, by the estimate
            prompts = measured_rows + estimated[len(measured_rows):]
            if not prompts:
                continue
            basis = (BASIS[True] if len(prompts) == len(measured_rows) else BASIS[False] if not measured_rows
                     else f"{BASIS[True]} for the first {len(measured_rows)} of {len(prompts)} prompts; {BASIS[False]} "
                          "for the rest")
            measurements[f"{side}_in_flight_{in_flight}"] = {
                "requests": len(prompts), "measured": len(measured_rows), "basis": basis,
                "new_token_share": [round(r["prompt_tokens_new"] / r["prompt_tokens"], 3) for r in prompts],
                **({"load1": [round(r["load1"], 2) for r in measured_rows],
                    "by_backend": summarise_by_backend(measured_rows)} if measured_rows else {})}
            figure[side] = median([r["prompt_tokens_new"] / r["prompt_tokens"] for r in prompts])
            figure[f"{side}_basis"] = basis
            idle_wall = args.idle and side == "after" and len(prompts) == len(measured_rows)
            if idle_wall:
                overall = summarise_by_backend([{**r, "backend": "all"} for r in measured_rows])["all"]
                measured_rates[in_flight] = {"prompt": overall["prompt_tokens_per_s"],
                                             "generation": overall["generation_tokens_per_s"]}
            for backend in HEADLINE_BACKENDS:
                evaluation = answers_after.get(backend, {}).get("evaluation_s_median") or 0.0
                if idle_wall:
                    per_backend[backend][side] = median([r["attempt_s"] for r in measured_rows if r["backend"] == backend])
                    per_backend[backend][f"{side}_basis"] = "measured: wall seconds on the idle machine"
                    continue
                per_backend[backend][side] = idle_attempt_s(prompts, backend, in_flight, answers, evaluation,
                                                            measured_rates.get(in_flight) if args.idle else None)
                per_backend[backend][f"{side}_basis"] = basis + (
                    "; timed at the idle after attempts' measured rates" if args.idle else "")
        order = ("in_flight", "before", "before_basis", "after", "after_basis")
        headline["new_token_share_median"].append({k: figure[k] for k in order if k in figure})
        for backend, key in HEADLINE_BACKENDS.items():
            headline[key].append({k: per_backend[backend][k] for k in order if k in per_backend[backend]})
    summary = {
        "bench": "attempt", "issue": 42, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commits": {"before": args.before_commit, "after": args.after_commit},
        "machine": {"cores": os.cpu_count(), "note": "idle: nothing else ran beside the after attempts (load1 per "
                    "request)" if args.idle else "shared with six other engineers' builds and tests: see load1 "
                    "per request; wall seconds follow the load, token shares do not"},
        "replay_set": str(folder / "requests.jsonl"),
        "idle_rates_tokens_per_s": ({f"in_flight_{k}": v for k, v in measured_rates.items()} if args.idle else IDLE_RATES),
        "headline": headline,
        "answers": {"before": answers_before, "after": answers_after},
        "measurements": measurements,
    }
    (folder / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(headline))
    return 0


if __name__ == "__main__":
    sys.exit(main())
