"""A stand-in LLM fitted to the raw attempts of the published learning benchmark (issue 27.5).

runs/learning/arms/*/attempts.jsonl (v2, qwen2.5-coder-1.5b, 270 drafts) says, by what the
worked-example slot showed (docs/memory.md, "The figures behind the slot"):

- the generic example: first drafts of elementwise operators right 12 times in 17, of the
  other families 4 in 50 (all of them MatVec's), so the base rate is per family;
- another family's kernel in the slot: right 0 times in 67;
- a kernel of the same family on a first draft: LeakyReLU 1 in 5 against 3 in 4 with the
  generic example (a factor of about 0.27); on a retry after a failed draft: 2 in 8;
- after a failed draft the generic example recovered 3 times in 183 drafts (1.6%);
- 39 of those 183 drafts repeated an earlier attempt.

The stand-in answers by those rates: a draft's success probability is the base rate of its
family (fresh) or 1.6% (retry) with the generic example or the family template (whose effect
was never measured: no template reached a prompt), times 0.27 (fresh) or 0.25 (retry) with a
kernel of its own family in the slot, and 0 with another family's. A failed retry repeats the
previous attempt with probability 0.21, reworded (a comment, another loop variable, other line
breaks: a near-repeat the episode must catch). Other failures are wrong kernels (off by one in
the first element). Randomness is seeded by (seed, task, draft number) only, so every arm
draws the same numbers and arms differ by what their memory put in the slot.

It checks the plumbing of the slot decision; it says nothing about a real model.
"""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.actors.openai_server import Reply, ScriptedAgent
from tests.launch.kernel_agent import kernel_reply

GOOD_KERNELS = Path(__file__).resolve().parents[1] / "npu_pool" / "candidates" / "good_kernel"
GENERIC_TASK = "0_ScaledAdd"
SELU = "1.0507009873554805f * (x[i] > 0.f ? x[i] : 1.6732632423543772f * (std::exp(x[i]) - 1.f))"
# task -> (family as actors/families.py reads its reference, the element expression of a correct kernel)
OPERATORS: dict[str, tuple[str, str | None]] = {
    "4_ReLU": ("elementwise", "x[i] > 0.f ? x[i] : 0.f"),
    "6_SiLU": ("elementwise", "x[i] / (1.f + std::exp(-x[i]))"),
    "7_Sigmoid": ("elementwise", "1.f / (1.f + std::exp(-x[i]))"),
    "8_Tanh": ("elementwise", "std::tanh(x[i])"),
    "45_ReLU6": ("elementwise", "std::fmin(std::fmax(x[i], 0.f), 6.f)"),
    "47_Softsign": ("elementwise", "x[i] / (1.f + std::fabs(x[i]))"),
    "48_HardSigmoid": ("elementwise", "std::fmin(std::fmax(x[i] + 3.f, 0.f), 6.f) / 6.f"),
    "10_HardSwish": ("elementwise", "x[i] * std::fmin(std::fmax(x[i] + 3.f, 0.f), 6.f) / 6.f"),
    "50_SELU": ("elementwise", SELU),
    "18_Softmax": ("softmax_norm", None),
    "20_LayerNorm": ("softmax_norm", None),
}

# Fitted to runs/learning/arms/*/attempts.jsonl (see the module docstring).
BASE_RATE = {"elementwise": 12 / 17, "softmax_norm": 0 / 5}
RECOVERY = 3 / 183
SAME_FAMILY_FRESH_FACTOR = (1 / 5) / (3 / 4)
SAME_FAMILY_RETRY = 2 / 8
REPEAT = 39 / 183

TASK_HEADING = re.compile(r"^## Task (\w+)", re.MULTILINE)
_ENTRY = re.compile(r'extern "C" void kernel\((.*?)\)\s*\{', re.DOTALL)
PREVIOUS_CODE = re.compile(r"Its code:\n```\w*\n(.*?)\n```", re.DOTALL)


def correct_source(task: str) -> str:
    expression = OPERATORS[task][1]
    if expression is not None:
        return kernel_reply(expression).strip().removeprefix("```cpp").removesuffix("```").strip() + "\n"
    lines = (GOOD_KERNELS / f"{task}.cpp").read_text().splitlines()
    return "\n".join(line for line in lines if not line.startswith("// ")) + "\n"


def wrong_source(source: str, number: int) -> str:
    """Compiles, runs, and is off by `number` in the first output element (one source per draft)."""
    match = _ENTRY.search(source)
    assert match, "a good kernel defines extern \"C\" void kernel(...)"
    params = " ".join(match.group(1).split())
    names = [p.strip().split()[-1].lstrip("*") for p in params.split(",")]
    inner = source.replace('extern "C" void kernel(', "static void kernel_exact(", 1)
    return inner + (f'\nextern "C" void kernel({params}) {{\n    kernel_exact({", ".join(names)});\n'
                    f"    out[0] += {number}.0f;\n}}\n")


def reworded(code: str) -> str:
    """The same kernel as a small model repeats it: a comment, another loop variable, other breaks."""
    renamed = re.sub(r"\bi\b", "idx", code)
    return "// second attempt, checked again\n" + renamed.replace("{\n", "{\n\n").replace(";\n", ";  // step\n", 1)


@dataclass
class Draft:
    """What one draft request showed, and what the stand-in answered."""

    task: str
    slot: str  # "generic", "same" or "other": the worked example's family against the task's
    slot_task: str
    retry: bool
    template: bool
    reask: bool = False  # the worker's "you repeated an earlier attempt" turn came after the task's
    outcome: str = ""


class FittedAgent:
    """Responder for tests/actors/openai_server.OpenAITestServer (one per campaign)."""

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.kinds = ScriptedAgent([])
        self.drafts: dict[str, int] = {}
        self.log: list[Draft] = []
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        kind = self.kinds.kind_of(body)
        if kind == "lesson":
            return Reply("Compute every output element from its input; check the first element.")
        if kind == "review":
            return Reply("VERDICT: LEGITIMATE\nIt computes every element from the inputs.")
        if kind == "refine":
            return Reply("This kernel is already as simple as I can make it.")
        draft = self.read(body)
        if draft is None:
            return Reply("I do not know this operator.")
        with self._lock:
            self.drafts[draft.task] = number = self.drafts.get(draft.task, 0) + 1
        rng = random.Random(f"{self.seed}/{draft.task}/{number}")
        success_draw, repeat_draw = rng.random(), rng.random()
        previous = PREVIOUS_CODE.search(self.task_turn(body) or "")
        if success_draw < self.success_probability(draft):
            draft.outcome, code = "correct", correct_source(draft.task)
        elif draft.retry and previous is not None and repeat_draw < REPEAT:
            draft.outcome, code = "repeat", reworded(previous.group(1))
        else:
            draft.outcome = "wrong"
            code = wrong_source(correct_source(draft.task), number)
        with self._lock:
            self.log.append(draft)
        return Reply(f"```cpp\n{code.strip()}\n```")

    @staticmethod
    def success_probability(draft: Draft) -> float:
        if draft.slot == "other":
            return 0.0
        family = OPERATORS[draft.task][0]
        if draft.slot == "same":
            return SAME_FAMILY_RETRY if draft.retry else BASE_RATE[family] * SAME_FAMILY_FRESH_FACTOR
        return RECOVERY if draft.retry else BASE_RATE[family]

    @staticmethod
    def task_turn(body: dict[str, Any]) -> str | None:
        """The user turn that states the task (a re-ask after a repeat adds turns after it)."""
        users = [m.get("content") or "" for m in body.get("messages", []) if m["role"] == "user"]
        return next((text for text in reversed(users) if "## From memory" in text), None)

    def read(self, body: dict[str, Any]) -> Draft | None:
        turn = self.task_turn(body)
        found = TASK_HEADING.findall(turn or "")
        if not found or found[0] not in OPERATORS:
            return None
        task = found[0]
        messages = body.get("messages", [])
        example = TASK_HEADING.findall(messages[1]["content"]) if len(messages) > 2 and messages[1]["role"] == "user" else []
        slot_task = example[0] if example else GENERIC_TASK
        if slot_task == GENERIC_TASK:
            slot = "generic"
        else:
            slot = "same" if OPERATORS.get(slot_task, ("?",))[0] == OPERATORS[task][0] else "other"
        retry = "It failed at the" in (turn or "")
        reask = messages[-1].get("content") != turn
        return Draft(task, slot, slot_task, retry, template="template kernel," in (turn or ""), reask=reask)
