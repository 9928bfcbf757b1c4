# ruff: noqa  (a record of what ran: bench/results/climb-probe-2026-12-06/README.md)
"""Dev check (not a benchmark): does the local model write a vector kernel from a climb prompt?
Operators outside the climb pilot's sets. Variant 'cur' = the prompt as built; 'formula' = the
current kernel's code replaced by its computation only, and the last instruction asks for the rung's form."""
import sys, json, re, time
from contextlib import ExitStack
sys.path.insert(0, "/work/main")
from launch.config import load_settings
from bench.learning.resume import with_llm
from tests.actors.test_climb import _climb_request, SUITE, LOCAL_MODEL
from actors.config import LLMConfig
from actors.prompting import PromptBuilder
from actors.climb import formula_lines
from openai import OpenAI

FORMULAS = {"48_HardSigmoid": "const float r = v / 6.0f + 0.5f;\n        outGm.SetValue(i, r < 0.0f ? 0.0f : (r > 1.0f ? 1.0f : r));",
            "47_Softsign": "outGm.SetValue(i, v / (1.0f + (v < 0.0f ? -v : v)));",
            "13_Sqrt": "outGm.SetValue(i, sqrtf(v));"}
variants = sys.argv[1].split(",")
seeds = [int(s) for s in sys.argv[2].split(",")]
settings = load_settings(None, overrides={"local_llm.n_threads": "2"}) if False else load_settings()
with ExitStack() as stack:
    s, meta = with_llm(settings, stack)
    client = OpenAI(base_url=s.llm.base_url, api_key="x")
    for task, body in FORMULAS.items():
        request, climb = _climb_request(SUITE / f"{task}.py", 8000)
        code = request.start.code
        old = code[code.index("        const float a"):code.index("    }\n}")]
        code = code.replace(old, "        " + body + "\n")
        start = request.start.model_copy(update={"code": code})
        climb = climb.model_copy(update={"formula": formula_lines(code)})
        request = request.model_copy(update={"start": start, "climb": climb})
        msgs = PromptBuilder(LLMConfig(**LOCAL_MODEL), "kernel").refine(request).messages
        for variant in variants:
            m = json.loads(json.dumps(msgs))
            if variant == "formula":
                u = m[-1]["content"]
                a = u.index("## The current kernel:"); b = u.index("## Its profile")
                head = u[a:u.index("\n", a)]
                u = u[:a] + head + "\nIts computation (a GetValue/SetValue loop over the block's share):\n```cpp\n" + climb.formula + "\n```\n\n" + u[b:]
                u = u.replace("Write a faster version that stays correct:", "Write this task's kernel in the next rung's form:")
                m[-1]["content"] = u
            for seed in seeds:
                t0 = time.time()
                r = client.chat.completions.create(model=s.llm.model, messages=m, temperature=0.7, max_tokens=1200, seed=seed)
                out = r.choices[0].message.content
                vec = bool(re.search(r"DataCopy", out)); scal = "GetValue" in out
                print(json.dumps({"task": task, "variant": variant, "seed": seed, "s": round(time.time()-t0), "datacopy": vec, "getvalue": scal}), flush=True)
                open(f"/tmp/climbdev/out-{task}-{variant}-{seed}.cpp", "w").write(out)
