"""bench/entry_probe.py asks the two forms of the Ascend C entry over the real OpenAI API (the
loopback server), seeds fixed per form, task and draw, and classifies what comes back with the
extraction; its `declaration` form is the rendering before 2026-12-07."""

from __future__ import annotations

import json
from pathlib import Path

from actors.briefing import task_brief
from actors.signature_shape import signature_shape
from bench.entry_probe import as_declaration, main
from npu_pool.backends import get_backend
from npu_pool.tasks.spec import load_task
from tests.actors.openai_server import OpenAITestServer, Reply

SUITE = Path(__file__).resolve().parents[2] / "suites" / "cpu" / "level1"
HEAD = 'using namespace AscendC;\nextern "C" __global__ __aicore__ void kernel(\n    GM_ADDR x,  // input\n'
CLOSED = f"```cpp\n{HEAD}    GM_ADDR tiling)  // tiling\n{{\n}}\n```"
LEFT_OPEN = f"```cpp\n{HEAD}    GM_ADDR tiling  // tiling\n{{\n}}\n```"


def test_the_declaration_form_is_the_entry_with_its_closing_line_as_before():
    signature = task_brief(load_task(SUITE / "4_ReLU.py", max_bytes=4 << 20), get_backend("npu-twin"), "kernel").signature
    old = as_declaration(signature)
    assert old.endswith("    GM_ADDR tiling      // KernelTiling in global memory\n);")
    assert old.split('extern "C"')[0] == signature.split('extern "C"')[0]  # the tiling struct as it was
    assert signature_shape(old) == signature_shape(signature)


def test_both_forms_are_asked_and_their_replies_kept_and_classified(tmp_path, capsys):
    with OpenAITestServer() as server:
        server.script(Reply(CLOSED), Reply(LEFT_OPEN), Reply(LEFT_OPEN), Reply("no code here"))
        assert main(["--llm-base-url", server.base_url, "--llm-model", server.model, "--tasks", "4_ReLU",
                     "--n", "2", "--out", str(tmp_path)]) == 0
        seeds = [request["body"]["seed"] for request in server.chat_requests]
        prompts = [request["body"]["messages"][-1]["content"] for request in server.chat_requests]
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (line["definition_replies"], line["definition_code"], line["definition_unclosed"]) == (2, 1, 1)
    assert (line["declaration_replies"], line["declaration_code"], line["declaration_unclosed"]) == (2, 0, 1)
    assert len(set(seeds)) == 4 and sorted(p.name for p in tmp_path.iterdir())[0] == "declaration-4_ReLU-0.md"
    assert "GM_ADDR tiling)     // KernelTiling" in prompts[0] and "GM_ADDR tiling      // KernelTiling" in prompts[2]
