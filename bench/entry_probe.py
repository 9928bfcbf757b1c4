"""Which form of the Ascend C entry a model completes into code the extraction takes (2026-12-07).

v6's twin half judged 19% of its Ascend C drafts `no_code` (C: 0.5%), and no reply was kept. This
probe asks bare npu-twin draft prompts (actors.prompting.PromptBuilder, no memory) for a few
operators N times each, in two forms of the task's rendered entry:

- `definition`: the backends' rendering since 2026-12-07 (npu_pool/backends/ascendc.py): the
  parameter list closed on its last parameter's line, then the body to fill;
- `declaration`: the rendering before: one commented parameter a line, `);` on a line of its own.

Each reply is classified by actors.code_extraction (code taken; an entry left unclosed; another
reason) and kept as `<form>-<task>-<k>.md` under --out. Seeds are fixed per form, task and draw.

    python -m bench.entry_probe --llm-base-url http://127.0.0.1:PORT/v1 --llm-model MODEL \
        [--tasks 4_ReLU,14_SumOverDim,37_Cumsum] [--n 3] [--max-tokens 1024] --out DIR

Prints one JSON line: `{"bench": "entry_probe", "<form>_replies", "<form>_code", "<form>_unclosed", ...}`.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import urllib.request
from pathlib import Path

from actors.briefing import task_brief
from actors.code_extraction import UNCLOSED_ENTRY, extract_code
from actors.config import LLMConfig
from actors.messages import DraftRequest
from actors.prompting import PromptBuilder
from npu_pool.backends import get_backend
from npu_pool.tasks.spec import load_task

SUITE = Path(__file__).resolve().parents[1] / "suites" / "cpu" / "level1"
FORMS = ("definition", "declaration")
_BODY = re.compile(r"\)(\s*//[^\n]*)\n\{\n    // the kernel's body\n\}$")


def as_declaration(signature: str) -> str:
    """The entry as rendered before 2026-12-07: `);` on a line of its own after the last parameter."""
    return _BODY.sub(lambda m: " " + m.group(1).lstrip(" ").rjust(len(m.group(1))) + "\n);", signature)


def ask(url: str, model: str, messages: list[dict], seed: int, max_tokens: int, temperature: float) -> str:
    body = {"model": model, "messages": messages, "temperature": temperature, "max_tokens": max_tokens, "seed": seed}
    request = urllib.request.Request(url.rstrip("/") + "/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=1800) as response:
        return json.load(response)["choices"][0]["message"]["content"] or ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.entry_probe", description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm-base-url", required=True)
    parser.add_argument("--llm-model", required=True)
    parser.add_argument("--tasks", default="4_ReLU,14_SumOverDim,37_Cumsum")
    parser.add_argument("--n", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    backend, config = get_backend("npu-twin"), LLMConfig()
    figures: dict[str, object] = {"bench": "entry_probe", "tasks": args.tasks.split(","), "n": args.n}
    for form in FORMS:
        counts = {"replies": 0, "code": 0, "unclosed": 0}
        for name in args.tasks.split(","):
            brief = task_brief(load_task(SUITE / f"{name}.py", max_bytes=4 << 20), backend, "kernel")
            if form == "declaration":
                brief = brief.model_copy(update={"signature": as_declaration(brief.signature or "")})
            messages = PromptBuilder(config, "kernel").draft(DraftRequest(task=brief)).messages
            for k in range(args.n):
                seed = random.Random(f"{form}-{name}-{k}").randrange(2**31)
                reply = ask(args.llm_base_url, args.llm_model, messages, seed, args.max_tokens, config.temperature)
                (args.out / f"{form}-{name}-{k}.md").write_text(reply)
                found = extract_code(reply, "kernel")
                counts["replies"] += 1
                counts["code"] += found.code is not None
                counts["unclosed"] += found.reason == UNCLOSED_ENTRY
                print(f"[entry_probe] {form} {name} {k}: {found.reason or 'code'}", flush=True)
        figures.update({f"{form}_{key}": value for key, value in counts.items()})
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
