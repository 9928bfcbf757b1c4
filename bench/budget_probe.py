"""The machine's own speed at the local model, measured before each session of the time-budget
benchmark (bench/budget.py), with nothing else running.

The `budget` row's hours are a third of the `full` row's wall time, and the rows run over several
sessions, not always on the same machine: a machine 30% slower at generating tokens stretches a
row's wall time by about as much. So each session starts with one fixed measurement: the bundled
model, loaded in-process with the server's threads and context, reads a fixed prompt of suite
sources (about 1,500 tokens) and writes 128 tokens at temperature 0. Prompt tokens per second and
generated tokens per second go to OUT/probes.json, with the time and the processor's name, so a
reading can say how fast the machine was in each row's sessions.

    python -m bench.budget_probe --out OUT [--model PATH]

Prints the probe as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from launch.local_llm.config import default_cache_dir
from launch.local_llm.models import QWEN25_CODER_15B
from npu_pool.backends.cpu import flush_buffer_bytes

REPOSITORY = Path(__file__).resolve().parents[1]
THREADS = 2  # what the model server gets on this kind of machine (2 cores)
PROMPT_TOKENS = 1500  # about a drafting prompt's length
GENERATED_TOKENS = 128


def fixed_prompt(llm: Any) -> str:
    """The suite's first sources, in name order, cut at PROMPT_TOKENS tokens: the same text every time."""
    text = ""
    for source in sorted((REPOSITORY / "suites" / "cpu").rglob("*.py")):
        text += source.read_text(encoding="utf-8")
        tokens = llm.tokenize(text.encode("utf-8"), add_bos=False)
        if len(tokens) >= PROMPT_TOKENS:
            return llm.detokenize(tokens[:PROMPT_TOKENS]).decode("utf-8", errors="ignore")
    raise SystemExit(f"bench.budget_probe: the suite's sources hold fewer than {PROMPT_TOKENS} tokens")


def cpu_name() -> str:
    """The processor's name and its widest vector extension (llama.cpp's speed depends on it; the name
    alone can be as vague as "AMD EPYC")."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "?"
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []))
    widest = next((f for f in ("avx512f", "avx2", "avx", "sse4_2") if f in flags), "")
    return f"{name} ({widest})" if widest else name


def probe(model: Path) -> dict[str, Any]:
    from llama_cpp import Llama  # the local-llm extra

    llm = Llama(model_path=str(model), n_threads=THREADS, n_threads_batch=THREADS, n_ctx=4096, seed=0,
                verbose=False, logits_all=False)
    prompt = fixed_prompt(llm)
    prompt_tokens = len(llm.tokenize(prompt.encode("utf-8")))
    start = time.perf_counter()
    first = None
    generated = 0
    for _ in llm.create_completion(prompt, max_tokens=GENERATED_TOKENS, temperature=0.0, stream=True):
        if first is None:
            first = time.perf_counter()  # the prompt is read before the first token comes out
        generated += 1
    end = time.perf_counter()
    first = first or end
    return {"at": datetime.now(UTC).isoformat(timespec="seconds"), "cpu": cpu_name(), "cores": os.cpu_count(),
            "cache_flush_mib": flush_buffer_bytes() >> 20,  # the profiler's write before each timed call here
            "load1": round(os.getloadavg()[0], 2), "prompt_tokens": prompt_tokens, "generated_tokens": generated,
            "prompt_tok_s": round(prompt_tokens / max(first - start, 1e-9), 1),
            "generate_tok_s": round((generated - 1) / max(end - first, 1e-9), 2) if generated > 1 else None}


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def sessions(out: Path, row: str) -> list[dict[str, Any]]:
    """Each session of the row with the machine's speed in it: the probe taken just before it (within 15
    minutes; else one taken within 15 minutes after its end), and, read from the attempts themselves (so also for sessions before the probes existed), the
    median seconds per generated token of the drafts that failed to compile (the model's time, and a
    compiler's few seconds)."""
    segments = json.loads((out / "segments.json").read_text()).get(row, []) if (out / "segments.json").is_file() else []
    probes = json.loads((out / "probes.json").read_text()) if (out / "probes.json").is_file() else []
    attempts = []
    path = out / row / "attempts.jsonl"
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if path.is_file() else []:
        try:
            attempts.append(json.loads(line))
        except ValueError:
            continue
    found = []
    for segment in segments:
        end = segment.get("end") or time.time()
        inside = [a for a in attempts if a.get("timestamp") and segment["start"] <= _epoch(a["timestamp"]) <= end]
        rates = sorted(a["wall_s"] / a["tokens_completion"] for a in inside
                       if a.get("category") == "compile_error" and a.get("tokens_completion"))
        # the probe a resume took just before the session, else one taken just after it ended (paused)
        near = ([p for p in probes if 0 <= segment["start"] - _epoch(p["at"]) <= 900][-1:]
                or [p for p in probes if segment.get("end") and 0 <= _epoch(p["at"]) - segment["end"] <= 900][:1])
        load = sorted(segment.get("load1") or [0.0])
        found.append({"start": datetime.fromtimestamp(segment["start"], UTC).isoformat(timespec="minutes"),
                      "hours": round((end - segment["start"]) / 3600, 2), "commit": (segment.get("commit") or "")[:7],
                      "load1_median": round(load[len(load) // 2], 1), "attempts": len(inside),
                      "attempts_wall_s": round(sum(a.get("wall_s", 0.0) for a in inside), 1),
                      "compile_error_drafts": len(rates),
                      "s_per_token": round(rates[len(rates) // 2], 3) if rates else None,
                      "probe": near[0] if near else None})
    return found


def _weighted_s_per_token(found: list[dict[str, Any]]) -> float | None:
    known = [(s["attempts_wall_s"], s["s_per_token"]) for s in found if s["s_per_token"] and s["attempts_wall_s"]]
    total = sum(w for w, _ in known)
    return sum(w * r for w, r in known) / total if total else None


def speed_adjusted_share(by_row: dict[str, list[dict[str, Any]]], budget_hours: float,
                         full_wall_s: float) -> dict[str, Any] | None:
    """The budget row's hours as a share of what the full row's work would have taken on the budget row's
    machine: full's wall time scaled by the two rows' seconds per generated token (each weighted by its
    sessions' attempt time; BY_ROW: `sessions` of each row). None until both rows have such drafts."""
    full, budget = _weighted_s_per_token(by_row.get("full", [])), _weighted_s_per_token(by_row.get("budget", []))
    if not (full and budget and full_wall_s):
        return None
    return {"full_s_per_token": round(full, 3), "budget_s_per_token": round(budget, 3),
            "share": round(budget_hours * 3600 / (full_wall_s * budget / full), 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.budget_probe", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the benchmark's folder (probes.json goes there)")
    parser.add_argument("--model", type=Path, default=default_cache_dir() / QWEN25_CODER_15B.file_name)
    args = parser.parse_args(argv)
    if not args.model.is_file():
        print(f"bench.budget_probe: no model at {args.model} (evokernel llm fetch)", file=sys.stderr)
        return 1
    record = probe(args.model)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "probes.json"
    probes = json.loads(path.read_text()) if path.is_file() else []
    probes.append(record)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(probes, indent=1) + "\n")
    tmp.replace(path)
    print(json.dumps({"bench": "budget_probe", **record}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
