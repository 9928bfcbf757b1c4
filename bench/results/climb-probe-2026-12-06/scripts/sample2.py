# ruff: noqa  (a record of what ran: bench/results/climb-probe-2026-12-06/README.md)
"""Dev check (not a benchmark), operators outside the climb pilot's sets: which refine prompt
makes the local model write a correct vector kernel from a scalar one?"""
import sys, json, re, time
from contextlib import ExitStack
sys.path.insert(0, "/work/main")
from launch.config import load_settings
from bench.learning.resume import with_llm
from tests.actors.test_climb import _climb_request, SUITE, LOCAL_MODEL
from actors.config import LLMConfig
from actors.prompting import PromptBuilder
from actors.climb import formula_lines
from actors.code_extraction import extract_code
from npu_pool.sandbox.task_loader import load_task_for
from npu_pool.verdict import Candidate
from npu_pool.verifier import evaluate
from openai import OpenAI

FORMULAS = {"48_HardSigmoid": "const float r = v / 6.0f + 0.5f;\n        outGm.SetValue(i, r < 0.0f ? 0.0f : (r > 1.0f ? 1.0f : r));",
            "47_Softsign": "outGm.SetValue(i, v / (1.0f + (v < 0.0f ? -v : v)));",
            "13_Sqrt": "outGm.SetValue(i, sqrtf(v));"}
GAP = "        // ... this task's computation on the tile v (n floats), in vector instructions ...\n"

def gap_variant(u, climb):
    a = u.index("## The current kernel:"); b = u.index("## Its profile")
    head = u[a:u.index("\n", a)]
    u = u[:a] + head + "\nIts computation, element by element:\n```cpp\n" + climb.formula + "\n```\n\n" + u[b:]
    code = climb.code
    lines = code.splitlines(keepends=True)
    i = next(k for k, l in enumerate(lines) if "WaitFlag<HardEvent::MTE2_V>" in l)
    j = next(k for k in range(i + 1, len(lines)) if "SetFlag<" in lines[k])
    comp = "".join(l.strip().split("  //")[0] + "\n" for l in lines[i + 1:j])
    gapped = "".join(lines[:i + 1]) + GAP + "".join(lines[j:])
    # the rung's code in the prompt (comments may be stripped): replace its computation lines
    start = u.index("Its kernel:\n```cpp\n") + len("Its kernel:\n```cpp\n"); end = u.index("```", start)
    shown = u[start:end]
    sl = shown.splitlines(keepends=True)
    i = next(k for k, l in enumerate(sl) if "WaitFlag<HardEvent::MTE2_V>" in l)
    j = next(k for k in range(i + 1, len(sl)) if "SetFlag<" in sl[k])
    shown2 = "".join(sl[:i + 1]) + GAP + "".join(sl[j:])
    u = u[:start] + shown2 + u[end:]
    t0 = u.index("Write this task's kernel in that form"); t1 = u.index("\n## Variants")
    u = u[:t0] + (f"In `{climb.task_id}` the gap held:\n```cpp\n{comp}```\n"
                  "Fill the gap with this task's computation (above) in vector instructions on v, and write the whole kernel.\n") + u[t1:]
    u = u.replace("Write a faster version that stays correct:", "Write the next rung's kernel with the gap filled:")
    return u

variants = sys.argv[1].split(",")
seeds = [int(s) for s in sys.argv[2].split(",")]
settings = load_settings()
harness = settings.harness.model_copy(update={"backend": "npu-twin"})
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
        if "first" in variants:  # the scalar start itself must be right
            v, _ = evaluate(load_task_for(SUITE / "level1" / f"{task}.py" if (SUITE / "level1").exists() else SUITE / f"{task}.py", harness), Candidate(source=code, format="kernel"), harness, profile=True)
            print(json.dumps({"task": task, "variant": "first", "gate": v.gate, "feasible": v.feasible}), flush=True)
        for variant in [x for x in variants if x != "first"]:
            m = json.loads(json.dumps(msgs))
            if variant == "gap":
                m[-1]["content"] = gap_variant(m[-1]["content"], climb)
            open(f"/tmp/climbdev/prompt-{task}-{variant}.txt", "w").write(m[-1]["content"])
            for seed in seeds:
                t0 = time.time()
                r = client.chat.completions.create(model=s.llm.model, messages=m, temperature=0.7, max_tokens=1200, seed=seed)
                out = r.choices[0].message.content
                src = extract_code(out, "kernel").code
                gate = "extract"; feas = False; ms = None
                if src:
                    v, prof = evaluate(load_task_for(SUITE / f"{task}.py", harness), Candidate(source=src, format="kernel"), harness, profile=True)
                    gate, feas = v.gate, v.feasible
                    ms = getattr(prof, "median_ms", None) if prof else None
                print(json.dumps({"task": task, "variant": variant, "seed": seed, "s": round(time.time()-t0), "datacopy": "DataCopy" in out, "getvalue": "GetValue" in out, "gate": gate, "feasible": feas, "ms": ms}), flush=True)
                open(f"/tmp/climbdev/out2-{task}-{variant}-{seed}.cpp", "w").write(out)
