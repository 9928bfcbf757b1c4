"""Where an attempt's time goes: prompt processing, generation and evaluation, per server setting.

Replays recorded prompts of the learning benchmark (`bench/attempt_record.py` records them,
in order, with the replies the model gave) against the local model server, one server per
configuration, all started at once (they share the model file's pages). Requests alternate
between configurations prompt by prompt (the order rotates each prompt), so a load change on
this shared machine hits every configuration alike; each server sees the recorded sequence,
so the prefix it can reuse from earlier requests is the one a campaign would find. Each
request streams: the first token's arrival ends prompt processing, the last ends generation.
Each reply's code is then judged by the real harness (verify + profile in one sandboxed
child, `npu_pool.verifier.evaluate`), which gives the evaluation time and the pass rate.

Prompt tokens per second count the tokens the server had to process: the prompt's tokens
less the longest prefix it shares with an earlier request on that server (the previous one,
or any with the prompt cache), estimated from the server's own tokenizer.

    python -m bench.attempt [--prompts bench/results/attempt_prompts.jsonl] [--configs baseline,tuned]
        [--limit N] [--max-tokens N] [--no-evaluate] [--seed S]

Configurations: `baseline` (the server as before issue 28), `tuned` (today's defaults,
`LocalLLMConfig()`), and `baseline+LEVER` / `tuned+LEVER` / `tuned-LEVER` variants naming one lever:
`logits` (logits_all off), `cache` (prompt cache, 1024 MB), `lookup` (prompt-lookup decoding,
10 tokens), `threads2` (2 threads). Prints one JSON line last, with the load average before
and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

DEFAULT_PROMPTS = REPOSITORY / "bench" / "results" / "attempt_prompts.jsonl"
SUITE = REPOSITORY / "suites" / "cpu"
# One lever each, applied to the baseline (+) or taken off the tuned defaults (-).
LEVERS: dict[str, dict[str, Any]] = {
    "logits": {"logits_all": False},
    "cache": {"prompt_cache_mb": 1024},
    "lookup": {"prompt_lookup_tokens": 10},
    "threads2": {"n_threads": 2},
}
LEVERS_OFF: dict[str, dict[str, Any]] = {
    "logits": {"logits_all": True},
    "cache": {"prompt_cache_mb": 0},
    "lookup": {"prompt_lookup_tokens": 0},
    "threads2": {"n_threads": None},
}
# The server's settings before issue 28: every logit kept, no cache, no drafting, one thread here.
BASELINE: dict[str, Any] = {"logits_all": True, "prompt_cache_mb": 0, "prompt_lookup_tokens": 0}


def config_for(name: str):
    """The LocalLLMConfig a configuration name stands for."""
    from launch.local_llm.config import LocalLLMConfig

    tuned = LocalLLMConfig()
    if name == "tuned":
        return tuned
    if name == "baseline":
        return tuned.model_copy(update=BASELINE)
    for sep, base, lever_values in (("+", "baseline", LEVERS), ("+", "tuned", LEVERS), ("-", "tuned", LEVERS_OFF)):
        head, _, lever = name.partition(sep)
        if head == base and lever in lever_values:
            return config_for(base).model_copy(update=lever_values[lever])
    raise SystemExit(f"bench.attempt: unknown configuration {name!r} (baseline, tuned, baseline+LEVER, "
                     f"tuned+LEVER, tuned-LEVER; levers: {', '.join(LEVERS)})")


def chatml(messages: list[dict[str, str]]) -> str:
    """The prompt text the chatml template makes of `messages` (to count shared prefixes)."""
    turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return turns + "<|im_start|>assistant\n"


def _post(url: str, body: dict[str, Any], timeout: float = 3600) -> Any:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(request, timeout=timeout)


def tokenize(base_url: str, text: str) -> list[int]:
    root = base_url.rsplit("/v1", 1)[0]
    with _post(f"{root}/extras/tokenize", {"input": text}) as response:
        return json.loads(response.read())["tokens"]


def shared_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stream_chat(base_url: str, model: str, row: dict[str, Any], max_tokens: int | None, seed: int,
                pid: int | None = None) -> dict[str, Any]:
    """One streamed request: seconds to the first token (prompt processing) and after it
    (generation), wall and the server's CPU seconds (`pid`: less sensitive to the machine's
    load than wall time), the reply, and the number of streamed tokens."""
    cpu = (lambda: process_cpu_s(pid)) if pid else (lambda: 0.0)
    cpu_start = cpu()
    cpu_first = None
    body = {"model": model, "messages": row["messages"], "max_tokens": max_tokens or row.get("max_tokens") or 1024,
            "temperature": row.get("temperature", 0.7), "stream": True, "seed": seed}
    started = time.perf_counter()
    first = None
    pieces: list[str] = []
    finish = None
    with _post(f"{base_url}/chat/completions", body) as response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            choice = (json.loads(line[5:]).get("choices") or [{}])[0]
            text = (choice.get("delta") or {}).get("content")
            if text:
                if first is None:
                    first, cpu_first = time.perf_counter(), cpu()
                pieces.append(text)
            finish = choice.get("finish_reason") or finish
    ended, cpu_end = time.perf_counter(), cpu()
    first = first or ended
    cpu_first = cpu_end if cpu_first is None else cpu_first
    return {"prompt_s": first - started, "generation_s": ended - first, "prompt_cpu_s": cpu_first - cpu_start,
            "generation_cpu_s": cpu_end - cpu_first, "reply": "".join(pieces),
            "streamed_tokens": len(pieces), "finish_reason": finish}


def evaluate_reply(task_id: str | None, reply: str, harness) -> dict[str, Any]:
    """The harness's verdict on the reply's code (verify + profile, one sandboxed child)."""
    from actors.code_extraction import extract_code
    from npu_pool.tasks import load_task_for
    from npu_pool.verdict import Candidate
    from npu_pool.verifier import evaluate

    started = time.perf_counter()
    code = extract_code(reply, "kernel").code
    path = next((p for p in SUITE.glob(f"level*/{task_id}.py")), None) if task_id else None
    if code is None or path is None:
        return {"evaluation_s": time.perf_counter() - started, "feasible": False,
                "gate": "extract" if code is None else "no_task"}
    verdict, _ = evaluate(load_task_for(path, harness), Candidate(source=code, format="kernel"), harness, profile=True)
    return {"evaluation_s": time.perf_counter() - started, "feasible": verdict.feasible, "gate": verdict.gate}


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(values), 2) if values else None


def _rate(tokens: int, rows: list[dict[str, Any]], key: str) -> float | None:
    seconds = sum(r.get(key) or 0.0 for r in rows)
    return round(tokens / seconds, 2) if seconds and all(r.get(key) is not None for r in rows) else None


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    prompt_tokens = sum(r["prompt_tokens_new"] for r in rows)
    prompt_s = sum(r["prompt_s"] for r in rows)
    gen_tokens = sum(r["streamed_tokens"] for r in rows)
    gen_s = sum(r["generation_s"] for r in rows)
    judged = [r for r in rows if "feasible" in r]
    return {
        "requests": len(rows), "attempt_s_median": _median(rows, "attempt_s"), "llm_s_median": _median(rows, "llm_s"),
        "prompt_s_median": _median(rows, "prompt_s"), "generation_s_median": _median(rows, "generation_s"),
        "evaluation_s_median": _median(rows, "evaluation_s"),
        "prompt_tokens_new_median": _median(rows, "prompt_tokens_new"),
        "completion_tokens_median": _median(rows, "streamed_tokens"),
        "prompt_tokens_per_s": round(prompt_tokens / prompt_s, 1) if prompt_s else None,
        "generation_tokens_per_s": round(gen_tokens / gen_s, 2) if gen_s else None,
        # per CPU second of the server: what one idle core would give, whatever the load
        "prompt_tokens_per_cpu_s": _rate(prompt_tokens, rows, "prompt_cpu_s"),
        "generation_tokens_per_cpu_s": _rate(gen_tokens, rows, "generation_cpu_s"),
        "feasible": sum(r["feasible"] for r in judged), "judged": len(judged),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", default=str(DEFAULT_PROMPTS), help="recorded prompts (bench/attempt_record.py)")
    parser.add_argument("--configs", default="baseline,tuned", help="comma-separated configurations")
    parser.add_argument("--limit", type=int, default=None, help="replay the first N prompts")
    parser.add_argument("--skip", type=int, default=0, help="skip the first N prompts")
    parser.add_argument("--max-tokens", type=int, default=None, help="cap the answers (default: as recorded)")
    parser.add_argument("--no-evaluate", action="store_true", help="LLM only: do not judge the replies")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed of prompt i: seed + i (same in every configuration)")
    parser.add_argument("--out", default=None, help="also write every row to this JSON lines file")
    parser.add_argument("--summarise", default=None, metavar="ROWS",
                        help="run nothing: summarise the rows of earlier runs (their --out files, comma-separated)")
    args = parser.parse_args(argv)
    if args.summarise:
        rows = [json.loads(line) for path in args.summarise.split(",") for line in Path(path).read_text().splitlines()
                if line.strip()]
        by_config: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_config.setdefault(row["config"], []).append(row)
        loads = [r["load1"] for r in rows]
        print(json.dumps({"bench": "attempt", "rows": len(rows), "source": args.summarise,
                          "load1_min": min(loads, default=None), "load1_max": max(loads, default=None),
                          "load1_median": _median(rows, "load1"),
                          "configs": {name: summarise(group) for name, group in by_config.items()}}))
        return 0

    from launch.local_llm.config import LocalLLMConfig
    from launch.local_llm.server import prepare_server
    from npu_pool.config import HarnessConfig

    rows_in = [json.loads(line) for line in Path(args.prompts).read_text().splitlines() if line.strip()]
    rows_in = rows_in[args.skip:][: args.limit]
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    configs = {name: config_for(name) for name in names}
    model = LocalLLMConfig().spec().name
    harness = HarnessConfig(backend="cpu")
    load_before = os.getloadavg()
    servers = {name: prepare_server(config) for name, config in configs.items()}
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    history: dict[str, list[list[int]]] = {name: [] for name in names}
    try:
        urls = {name: server.start() for name, server in servers.items()}
        for i, row in enumerate(rows_in):
            order = names[i % len(names):] + names[: i % len(names)]
            for name in order:
                tokens = tokenize(urls[name], chatml(row["messages"]))
                earlier = history[name] if configs[name].prompt_cache_mb else history[name][-1:]
                reused = max((shared_prefix(t, tokens) for t in earlier), default=0)
                history[name].append(tokens)
                load = os.getloadavg()[0]
                result = stream_chat(urls[name], model, row, args.max_tokens, args.seed + i, servers[name].process.pid)
                result.update(config=name, index=i, task=row.get("task"), prompt_tokens=len(tokens),
                              prompt_tokens_new=max(1, len(tokens) - reused), load1=load)
                result["llm_s"] = result["prompt_s"] + result["generation_s"]
                if not args.no_evaluate:
                    result.update(evaluate_reply(row.get("task"), result["reply"], harness))
                result["attempt_s"] = result["llm_s"] + result.get("evaluation_s", 0.0)
                results[name].append(result)
                print(f"[attempt] {i + 1}/{len(rows_in)} {name}: {row.get('task')} prompt {result['prompt_s']:.1f} s "
                      f"({result['prompt_tokens_new']} new of {len(tokens)} tokens), generation "
                      f"{result['generation_s']:.1f} s ({result['streamed_tokens']} tokens; CPU {result['prompt_cpu_s']:.1f} + "
                      f"{result['generation_cpu_s']:.1f} s), evaluation "
                      f"{result.get('evaluation_s', 0):.1f} s, {'feasible' if result.get('feasible') else result.get('gate', '-')}"
                      f"; load {load:.1f}", file=sys.stderr, flush=True)
                if args.out:
                    with open(args.out, "a") as handle:
                        handle.write(json.dumps(result) + "\n")
    finally:
        for server in servers.values():
            server.close()
    print(json.dumps({
        "bench": "attempt", "prompts": len(rows_in), "source": str(args.prompts), "max_tokens": args.max_tokens,
        "evaluated": not args.no_evaluate, "cores": os.cpu_count(),
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "configs": {name: {"settings": configs[name].model_dump(include={"n_threads", "logits_all", "prompt_cache_mb",
                                                                          "prompt_lookup_tokens"}),
                           **summarise(results[name])} for name in names},
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
