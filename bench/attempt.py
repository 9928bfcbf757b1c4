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

`--requests FILE --in-flight N` (issue 42) replays the fixed set of DraftRequests that
`bench.attempt_record --draft-set` writes instead: this checkout's PromptBuilder makes the
prompts (so a layout is measured on the same content as another), sent as the agent sends
them (its stop sequences, `actors.llm_client.CODE_STOP`, where it has them), one operator at a
time (each operator's drafts in turn, the server on every core) or two in flight (the two
operators of a kernel language alternating, one thread: the harness works beside the model).
Tokens read anew are the server's own count (`prompt_tokens_evaluated`, from its log), beside
the estimate; answers cut at max_tokens are counted per backend.

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
import re
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


def requests_as_prompts(path: Path, in_flight: int) -> list[dict[str, Any]]:
    """The replay set's DraftRequests as this checkout's prompts, in the order an agent sends them."""
    import actors.llm_client as client
    from actors.config import LLMConfig
    from actors.messages import DraftRequest
    from actors.prompting import PromptBuilder
    from launch.local_llm.config import LocalLLMConfig
    from launch.local_llm.settings import local_llm_config_for_agent

    config = local_llm_config_for_agent(LLMConfig(), LocalLLMConfig().spec(), "http://127.0.0.1:1/v1")
    builder = PromptBuilder(config, "kernel")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    operators = list(dict.fromkeys(r["operator"] for r in rows))
    backends = list(dict.fromkeys(r["backend"] for r in rows))
    # one in flight: an operator's drafts in turn; two: a kernel language's two operators alternate
    order = ((lambda r: (backends.index(r["backend"]), operators.index(r["operator"]), r["round"])) if in_flight == 1
             else (lambda r: (backends.index(r["backend"]), r["round"], operators.index(r["operator"]))))
    prompts = []
    for row in sorted(rows, key=order):
        messages = builder.draft(DraftRequest.model_validate(row["request"])).messages
        prompts.append({"task": row["operator"], "backend": row["backend"], "memory": row["memory"],
                        "messages": messages, "max_tokens": config.max_tokens, "temperature": config.temperature,
                        "stop": getattr(client, "CODE_STOP", None)})
    return prompts


_PREFIX_HIT = re.compile(r"Llama\.generate: \d+ prefix-match hit, remaining (\d+) prompt tokens to eval")


def rss_mb(pid: int) -> float | None:
    """Resident memory of the server (its prompt cache's states included), from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def log_size(server) -> int:
    return os.fstat(server._log.fileno()).st_size


def prompt_tokens_evaluated(server, since: int, prompt_tokens: int) -> int:
    """Tokens the server read anew for the request whose log starts at byte `since`: llama-cpp-
    python (verbose, its server's default) prints `N prefix-match hit, remaining M prompt tokens
    to eval` when it reuses its KV cache (after loading a prompt-cache state, too), "full prompt
    already cached" when nothing is left, and neither when it starts from scratch."""
    text = os.pread(server._log.fileno(), log_size(server) - since, since).decode(errors="replace")
    if "full prompt already cached" in text:
        return 0
    found = _PREFIX_HIT.findall(text)
    return int(found[-1]) if found else prompt_tokens


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
    if row.get("stop"):
        body["stop"] = row["stop"]
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


def evaluate_reply(task_id: str | None, reply: str, harness, suite: Path = SUITE, profile: bool = True) -> dict[str, Any]:
    """The harness's verdict on the reply's code (verify + profile, one sandboxed child)."""
    from actors.code_extraction import extract_code
    from npu_pool.sandbox.task_loader import load_task_for
    from npu_pool.verdict import Candidate
    from npu_pool.verifier import evaluate

    started = time.perf_counter()
    code = extract_code(reply, "kernel").code
    path = next((p for p in suite.glob(f"level*/{task_id}.py")), None) if task_id else None
    if code is None or path is None:
        return {"evaluation_s": time.perf_counter() - started, "feasible": False,
                "gate": "extract" if code is None else "no_task"}
    verdict, _ = evaluate(load_task_for(path, harness), Candidate(source=code, format="kernel"), harness, profile=profile)
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
        "prompt_tokens_median": _median(rows, "prompt_tokens"),
        "new_token_share_median": _median([{"share": r["prompt_tokens_new"] / r["prompt_tokens"]} for r in rows
                                           if r.get("prompt_tokens")], "share"),
        "cut_at_max_tokens": sum(r.get("finish_reason") == "length" for r in rows),
        "load1_median": _median(rows, "load1"),
    }


def summarise_by_backend(rows: list[dict[str, Any]]) -> dict[str, Any]:
    backends = list(dict.fromkeys(r.get("backend") or "cpu" for r in rows))
    return {backend: summarise([r for r in rows if (r.get("backend") or "cpu") == backend]) for backend in backends}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", default=str(DEFAULT_PROMPTS), help="recorded prompts (bench/attempt_record.py)")
    parser.add_argument("--configs", default="baseline,tuned", help="comma-separated configurations")
    parser.add_argument("--limit", type=int, default=None, help="replay the first N prompts")
    parser.add_argument("--skip", type=int, default=0, help="skip the first N prompts")
    parser.add_argument("--max-tokens", type=int, default=None, help="cap the answers (default: as recorded)")
    parser.add_argument("--no-evaluate", action="store_true", help="LLM only: do not judge the replies")
    parser.add_argument("--verify-only", action="store_true", help="judge feasibility only (no profile: the Ascend C "
                        "twin's profile takes a minute on a busy machine)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed of prompt i: seed + i (same in every configuration)")
    parser.add_argument("--out", default=None, help="also write every row to this JSON lines file")
    parser.add_argument("--requests", default=None, help="replay this set of DraftRequests (attempt_record --draft-set) "
                        "as this checkout's prompts; --configs defaults to tuned")
    parser.add_argument("--in-flight", type=int, default=1, choices=(1, 2), help="with --requests: operators in flight")
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
                          "configs": {name: summarise_by_backend(group) for name, group in by_config.items()}}))
        return 0

    from launch.local_llm.config import LocalLLMConfig
    from launch.local_llm.server import prepare_server
    from npu_pool.config import HarnessConfig

    if args.requests:
        rows_in = requests_as_prompts(Path(args.requests), args.in_flight)
        args.configs = "tuned" if args.configs == parser.get_default("configs") else args.configs
    else:
        rows_in = [json.loads(line) for line in Path(args.prompts).read_text().splitlines() if line.strip()]
    rows_in = rows_in[args.skip:][: args.limit]
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    configs = {name: config_for(name) for name in names}
    if args.requests:  # the threads a run with this many operators in flight gets (docs/local_llm.md)
        configs = {name: c.model_copy(update={"n_threads": c.threads(harness_beside=args.in_flight > 1)})
                   for name, c in configs.items()}
    model = LocalLLMConfig().spec().name
    harnesses: dict[str, Any] = {}
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
                since = log_size(servers[name])
                result = stream_chat(urls[name], model, row, args.max_tokens, args.seed + i, servers[name].process.pid)
                measured = prompt_tokens_evaluated(servers[name], since, len(tokens))
                result.update(config=name, index=i, task=row.get("task"), backend=row.get("backend", "cpu"),
                              memory=row.get("memory"), in_flight=args.in_flight if args.requests else None,
                              prompt_tokens=len(tokens), prompt_tokens_new_estimate=max(1, len(tokens) - reused),
                              prompt_tokens_new=measured, load1=load, server_rss_mb=rss_mb(servers[name].process.pid))
                result["llm_s"] = result["prompt_s"] + result["generation_s"]
                if not args.no_evaluate:
                    backend = result["backend"]
                    harness = harnesses.setdefault(backend, HarnessConfig(backend=backend))
                    result.update(evaluate_reply(row.get("task"), result["reply"], harness, profile=not args.verify_only))
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
        "bench": "attempt", "prompts": len(rows_in), "source": str(args.requests or args.prompts),
        "in_flight": args.in_flight if args.requests else None, "max_tokens": args.max_tokens,
        "evaluated": not args.no_evaluate, "cores": os.cpu_count(),
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "configs": {name: {"settings": configs[name].model_dump(include={"n_threads", "logits_all", "prompt_cache_mb",
                                                                          "prompt_lookup_tokens"}),
                           "by_backend": summarise_by_backend(results[name]), **summarise(results[name])}
                    for name in names},
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
