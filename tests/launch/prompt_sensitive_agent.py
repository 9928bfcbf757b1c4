"""A stand-in LLM whose answer depends on what its prompt shows, for the memory mechanism test.

It behaves like the small model of the first learning benchmark, reduced to three rules:

- shown a correct kernel of the same operator family (anywhere in the messages: context,
  worked example), it writes a correct kernel with high probability (`p_with_exemplar`);
- otherwise it succeeds rarely (`cold`, per operator: easy members of a family more often);
- when it fails and the prompt shows broken code (a failed attempt of its own, say the
  previous attempt), it copies it with probability `p_copy`: a compile error; its other
  failures compute the wrong values.

So what the memory shows decides how often it succeeds, and broken code in the prompt decides
how it fails (the first benchmark's small model copied broken code it was shown).

Every answer is real kernel-format C that the real verifier judges: correct kernels are the
suite's known-correct candidates (tests/npu_pool/candidates/good_kernel, and the elementwise
kernels of tests/launch/kernel_agent.py); a broken one is a correct kernel plus an undeclared
name; a wrong one adds 1 to the first output element. Each kernel carries a marker comment
(family, task, draft number, correct or not), which is how the stand-in recognises its own
earlier code when the memory shows it again; lessons and compiler lines never carry it.

Randomness is seeded by (seed, task, draft number) only, so every arm draws the same numbers
and arms differ by their prompts alone. Refinement requests get an answer without code (an
attempt that costs no evaluation): the mechanism test measures first feasible kernels.
One instance serves one campaign (it counts drafts per task).
"""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.actors.openai_server import Reply, ScriptedAgent, last_user_message
from tests.launch.kernel_agent import ELEMENTWISE, kernel_reply

GOOD_KERNELS = Path(__file__).resolve().parents[1] / "npu_pool" / "candidates" / "good_kernel"
# task -> (family, the reference marker of kernel_agent for generated elementwise kernels)
OPERATORS: dict[str, tuple[str, str | None]] = {
    "4_ReLU": ("elementwise", "torch.relu(x)"),
    "6_SiLU": ("elementwise", "F.silu(x)"),
    "7_Sigmoid": ("elementwise", "torch.sigmoid(x)"),
    "8_Tanh": ("elementwise", "torch.tanh(x)"),
    "18_Softmax": ("normalisation", None),
    "20_LayerNorm": ("normalisation", None),
    "22_BatchNormEval": ("normalisation", None),
    "14_SumOverDim": ("reduction", None),
    "17_ArgmaxOverDim": ("reduction", None),
}
MARKER = re.compile(r"// stand-in kernel: family=(\w+) task=(\w+) draft=(\d+) (correct|broken|wrong)")
TASK_HEADING = re.compile(r"^## Task (\w+)", re.MULTILINE)
_ENTRY = re.compile(r'extern "C" void kernel\((.*?)\)\s*\{', re.DOTALL)


def correct_source(task: str) -> str:
    """A known-correct kernel for `task` (header comments dropped)."""
    marker = OPERATORS[task][1]
    if marker is not None:
        return kernel_reply(ELEMENTWISE[marker]).strip().removeprefix("```cpp").removesuffix("```").strip() + "\n"
    lines = (GOOD_KERNELS / f"{task}.cpp").read_text().splitlines()
    return "\n".join(line for line in lines if not line.startswith("// ")) + "\n"


def broken_source(source: str) -> str:
    """Does not compile: the kernel uses a name nobody declared."""
    return source + "static const float evk_bias = undeclared_bias_table[0];\n"


def wrong_source(source: str) -> str:
    """Compiles, runs, and is off by one in the first output element."""
    match = _ENTRY.search(source)
    assert match, "a good kernel defines extern \"C\" void kernel(...)"
    params = " ".join(match.group(1).split())
    names = [p.strip().split()[-1].lstrip("*") for p in params.split(",")]
    inner = source.replace('extern "C" void kernel(', "static void kernel_exact(", 1)
    return inner + (f'\nextern "C" void kernel({params}) {{\n    kernel_exact({", ".join(names)});\n'
                    "    out[0] += 1.0f;\n}\n")


@dataclass
class Shown:
    """What one request's messages showed, read from the markers of the stand-in's own code."""

    task: str
    family: str
    exemplar_tasks: list[str] = field(default_factory=list)  # correct kernels of the same family
    broken_tasks: list[str] = field(default_factory=list)  # failed code (broken or wrong)


class PromptSensitiveAgent:
    """Responder for tests/actors/openai_server.OpenAITestServer (one per campaign)."""

    def __init__(self, cold: dict[str, float], seed: int = 0, p_with_exemplar: float = 0.85, p_copy: float = 0.7):
        self.cold, self.seed = cold, seed
        self.p_with_exemplar, self.p_copy = p_with_exemplar, p_copy
        self.kinds = ScriptedAgent([])
        self.drafts: dict[str, int] = {}
        self.log: list[tuple[Shown, str]] = []  # (what the draft prompt showed, the answer's kind)
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        kind = self.kinds.kind_of(body)
        if kind == "lesson":
            return Reply("Declare every name before use and write every output element.")
        if kind == "review":
            return Reply("VERDICT: LEGITIMATE\nIt computes every element from the inputs.")
        if kind == "refine":
            return Reply("This kernel is already as simple as I can make it.")
        shown = self.read(body)
        if shown is None:
            return Reply("I do not know this operator.")
        with self._lock:
            self.drafts[shown.task] = number = self.drafts.get(shown.task, 0) + 1
        rng = random.Random(f"{self.seed}/{shown.task}/{number}")
        success_draw, copy_draw = rng.random(), rng.random()
        p = self.p_with_exemplar if shown.exemplar_tasks else self.cold.get(shown.task, 0.0)
        if success_draw < p:
            outcome = "correct"
        elif shown.broken_tasks and copy_draw < self.p_copy:
            outcome = "broken"
        else:
            outcome = "wrong"
        with self._lock:
            self.log.append((shown, outcome))
        return Reply(f"```cpp\n{self.kernel(shown, number, outcome)}```")

    @staticmethod
    def read(body: dict[str, Any]) -> Shown | None:
        """The task this request is about (its user turn's heading) and the stand-in's own
        kernels the messages show."""
        found = TASK_HEADING.findall(last_user_message(body))
        task = next((t for t in found if t in OPERATORS), None)
        if task is None:
            return None
        family = OPERATORS[task][0]
        shown = Shown(task, family)
        text = "\n".join(m.get("content") or "" for m in body.get("messages", []))
        for fam, other, _, state in MARKER.findall(text):
            if state == "correct" and fam == family:
                shown.exemplar_tasks.append(other)
            elif state != "correct":
                shown.broken_tasks.append(other)
        return shown

    @staticmethod
    def kernel(shown: Shown, number: int, outcome: str) -> str:
        source = correct_source(shown.task)
        if outcome == "broken":
            source = broken_source(source)
        elif outcome == "wrong":
            source = wrong_source(source)
        marker = f"// stand-in kernel: family={shown.family} task={shown.task} draft={number} {outcome}\n"
        return marker + source
