"""A stand-in LLM fitted to what the benchmarks' raw drafts showed (issues 27.5 and 41).

v2 (arms/*/attempts.jsonl in bench/results/2026-11-24-qwen2.5-coder-1.5b-instruct/raw.tar.xz,
qwen2.5-coder-1.5b, 270 drafts) and v3 (576 evaluation drafts per domain, field `shown`) say, by what a draft's prompt held beyond the static brief:

- nothing (the brief and the generic example): a family the model knows (C elementwise) right
  about 0.6 of the time on a fresh draft; a family or language it does not know (Ascend C)
  almost never (v3 twin `none` 0%);
- a verified kernel of the same family in the slot: where the model does not know the language,
  the lever (twin elementwise with ReLU6's kernel in the slot 11 of 19, 0 of 13 without); where
  it does, worse than nothing (v2 LeakyReLU 1 in 5 against 3 in 4; factor about 0.5);
- a kernel of another family: never right (v2 0 of 67; v3 C 3 of 55 with ReLU6's kernel);
- ranked items on top (past attempts, lessons): the harm is content (v3 C value drafts with
  neither a banked kernel nor ranked items 36/104, with either 6/88): a factor of 0.3;
- after a failed draft the generic example recovered 3 times in 183 (1.6%), a same-family kernel
  2 in 8; 39 of those 183 retries repeated an earlier attempt.

The stand-in answers by those rates (`success_probability`): a failed retry repeats the previous
attempt with probability 0.21, reworded (a near-repeat the episode must catch); other failures
are wrong kernels (off in the first element). Randomness is seeded by (seed, task, draft number)
only, so every arm draws the same numbers and arms differ by what their memory showed.

It checks the mechanism; it says nothing about a real model.
"""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory_actor.ladder import example_tasks, ladder_tasks
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
# The family worked examples' tasks (memory_actor/bundles/examples.yaml), by family.
# the family examples' tasks and the ladder's own (its rungs are shown under their task's name)
EXAMPLE_FAMILY = {task: family for task, (family, _) in {**example_tasks(), **ladder_tasks()}.items()}

# Fitted to the benchmarks' raw drafts (see the module docstring). The model knows the language
# of elementwise kernels and not that of softmax/normalisation ones.
BARE_RATE = {"elementwise": 0.6, "softmax_norm": 0.03}
KNOWN = {family for family, rate in BARE_RATE.items() if rate >= 0.3}
SAME_FAMILY_KNOWN_FACTOR = 0.5  # v2: LeakyReLU with ReLU's kernel 1/5 against 3/4
SAME_FAMILY_UNKNOWN = 11 / 19  # v3 twin: elementwise with a same-family kernel in the slot
RANKED_FACTOR = 0.3  # v3 C: (6/88) / (36/104) at most; the harm is content
RECOVERY = 3 / 183
SAME_FAMILY_RETRY = 2 / 8
REPEAT = 39 / 183


def success_probability(family: str, slot: str, ranked: bool, retry: bool) -> float:
    """The world: a draft's chance of being right by what its prompt showed beyond the brief
    (slot: generic, same (a kernel or the example of the task's family) or other)."""
    if slot == "other":
        return 0.0
    if retry:
        rate = SAME_FAMILY_RETRY if slot == "same" else RECOVERY
    elif slot == "same":
        rate = BARE_RATE[family] * SAME_FAMILY_KNOWN_FACTOR if family in KNOWN else SAME_FAMILY_UNKNOWN
    else:
        rate = BARE_RATE[family]
    return rate * RANKED_FACTOR if ranked else rate

TASK_HEADING = re.compile(r"^## Task (\w+)", re.MULTILINE)
RANKED_BLOCK = re.compile(r"^### \[(practice|experience|trace)\]", re.MULTILINE)
PINNED_EXAMPLE = re.compile(r"^### \[api\] worked example, (\w+) family", re.MULTILINE)
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
    ranked: bool  # ranked items (practices, lessons, other kernels) were in the prompt
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
        return success_probability(OPERATORS[draft.task][0], draft.slot, draft.ranked, draft.retry)

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
        family = OPERATORS[task][0]
        pinned = PINNED_EXAMPLE.findall(turn or "")
        if slot_task == GENERIC_TASK and pinned:  # the family's example pinned in the user turn
            slot_task, slot = f"example_{pinned[0]}", "same" if pinned[0] == family else "other"
        elif slot_task == GENERIC_TASK:
            slot = "generic"
        else:
            shown = EXAMPLE_FAMILY.get(slot_task) or OPERATORS.get(slot_task, ("?",))[0]
            slot = "same" if shown == family else "other"
        retry = "It failed at the" in (turn or "")
        reask = messages[-1].get("content") != turn
        return Draft(task, slot, slot_task, retry, ranked=bool(RANKED_BLOCK.search(turn or "")), reask=reask)
