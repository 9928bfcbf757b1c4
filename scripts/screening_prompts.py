"""Write the cold prompts a v3 screening pass sends, one per pool operator, as JSON: the
benchmark's own draft pass (retrieval none, a seeded bank, the local model's LLM settings)
against the scripted loopback OpenAI server, whose every reply is a kernel that does not
compile. Run it at two checkouts and compare the files byte for byte before an earlier folder's
screening drafts are reused (`--reuse-screening`, docs/learning_benchmark.md).

    PYTHONPATH=. .venv/bin/python scripts/screening_prompts.py --backend cpu --out /tmp/prompts-HEAD.json
    cmp /tmp/prompts-OLD.json /tmp/prompts-HEAD.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="cpu", choices=["cpu", "npu-twin"])
    p.add_argument("--wide-pool", action="store_true", help="the wide pool (default: the v3 pool)")
    p.add_argument("--bank", default=None, help="a seeded bank to copy (default: seed a fresh one here)")
    p.add_argument("--out", required=True, help="JSON file: the chat messages of every request, in pool order")
    args = p.parse_args()

    from bench.learning.evaluation import run_draft_pass
    from bench.learning.learning_pass import LearningBenchmark
    from bench.learning.plan import ARMS, parse_args, plan_of
    from bench.learning.resume import build_settings
    from launch.local_llm.settings import local_llm_settings
    from tests.actors.openai_server import OpenAITestServer, Reply

    bench_args = parse_args(["--backend", args.backend, *(["--wide-pool"] if args.wide_pool else []),
                             "--set", f"harness.backend={args.backend}", "--set", "llm.candidate_format=kernel"])
    plan, settings = plan_of(bench_args), build_settings(bench_args)
    work = Path(tempfile.mkdtemp(prefix="screening-prompts-"))
    try:
        if args.bank:
            bank = work / "seeded"
            shutil.copytree(args.bank, bank, ignore=shutil.ignore_patterns("writer.lock"))
        else:
            bank = LearningBenchmark(settings, work / "fresh").seed_bank()
        with OpenAITestServer() as server:
            llm_settings = local_llm_settings(settings, server.base_url)
            server.model = llm_settings.llm.model
            server.default = Reply(content="```cpp\nint broken = ;\n```")
            run_draft_pass(llm_settings, work / "pass", bank, ARMS["none"], plan["pool"], 100, "prompt-check")
            prompts = [request["body"]["messages"] for request in server.chat_requests]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    Path(args.out).write_text(json.dumps(prompts))
    print(f"{len(prompts)} prompts ({sum(len(m['content']) for msgs in prompts for m in msgs)} characters) -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
