"""Tokens a replay would read anew, without the model: the server's reuse rule on its own tokens.

Where measuring every configuration on the real server does not fit (a pass of the replay set
takes 10 to 25 minutes on the busy 2-core machine), this applies what llama-cpp-python 0.3.36
does to each prompt's tokens (its tokenizer, the GGUF's vocabulary only): the KV cache keeps the
previous request's tokens and reuses their longest shared prefix; with the RAM prompt cache it
may instead load the saved state (prompt plus answer, here the prompt) sharing the longest
prefix, states evicted least recently used once their llama.cpp state (KV_BYTES_PER_TOKEN a
token) passes the cache's size. Rows carry `estimated: true`; `bench.attempt` on the real
server measured the same rule within a few tokens (docs/local_llm.md, "Attempt speed").

    python -m bench.attempt_estimate --requests bench/results/attempt-2026-11-28/requests.jsonl \
        --in-flight 1 [--cache-mb 0] --out ROWS.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import OrderedDict
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from bench.attempt import chatml, requests_as_prompts, shared_prefix  # noqa: E402

KV_BYTES_PER_TOKEN = 28 * 2 * 2 * 128 * 2  # Qwen2.5-1.5B: layers x (K, V) x KV heads x head size x f16


def new_tokens(prompts: list[list[int]], cache_mb: int) -> list[int]:
    """Tokens read anew per prompt, in order (the server's rule, module docstring)."""
    live: list[int] = []
    cache: OrderedDict[int, list[int]] = OrderedDict()
    out = []
    for i, tokens in enumerate(prompts):
        reused = shared_prefix(live, tokens)
        if cache:
            best = max(cache, key=lambda k: shared_prefix(cache[k], tokens))
            if shared_prefix(cache[best], tokens) > reused:
                reused = shared_prefix(cache[best], tokens)
                cache.move_to_end(best)
        out.append(len(tokens) - reused)
        live = tokens
        if cache_mb:
            cache[i] = tokens
            while sum(len(t) for t in cache.values()) * KV_BYTES_PER_TOKEN > cache_mb << 20 and len(cache) > 1:
                cache.popitem(last=False)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", required=True)
    parser.add_argument("--in-flight", type=int, default=1, choices=(1, 2))
    parser.add_argument("--cache-mb", type=int, default=None, help="default: this checkout's LocalLLMConfig")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    from llama_cpp import Llama

    from launch.local_llm.config import LocalLLMConfig
    from launch.local_llm.server import ensure_model

    config = LocalLLMConfig()
    cache_mb = config.prompt_cache_mb if args.cache_mb is None else args.cache_mb
    vocab = Llama(model_path=str(ensure_model(config)), vocab_only=True, verbose=False)
    rows = requests_as_prompts(Path(args.requests), args.in_flight)
    tokens = [vocab.tokenize(chatml(r["messages"]).encode(), special=True) for r in rows]
    with open(args.out, "w") as handle:
        for row, toks, new in zip(rows, tokens, new_tokens(tokens, cache_mb), strict=True):
            handle.write(json.dumps({"task": row["task"], "backend": row["backend"], "memory": row["memory"],
                                     "in_flight": args.in_flight, "prompt_tokens": len(toks), "prompt_tokens_new": new,
                                     "prompt_cache_mb": cache_mb, "estimated": True}) + "\n")
    print(json.dumps({"bench": "attempt_estimate", "in_flight": args.in_flight, "prompt_cache_mb": cache_mb,
                      "new_token_share": [round(n / len(t), 3) for n, t in zip(new_tokens(tokens, cache_mb), tokens,
                                                                                strict=True)]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
