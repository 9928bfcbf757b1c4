"""A scripted LLM for the time-budget and stop tests (issue 67): per operator, a list of what its
successive candidates are, as real kernel-format C the harness compiles and runs.

Each entry is one of `broken` (does not compile), `wrong` (compiles, computes the wrong thing), or
`slow:R` (correct, R volatile passes over the data: a larger R is slower, so a refinement from
`slow:20` to `slow:5` gains about 4x and one to `slow:40` loses). Every candidate carries its own
number, so no two are the same code (a repeat would not be evaluated again).
"""

from __future__ import annotations

import threading
from typing import Any

from tests.actors.openai_server import Reply, ScriptedAgent, last_user_message

ARGS = "const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1"
MARKERS = {"4_ReLU": ("torch.relu(x)", "x[i] > 0.f ? x[i] : 0.f"),
           "7_Sigmoid": ("torch.sigmoid(x)", "1.f / (1.f + std::exp(-x[i]))"),
           "8_Tanh": ("torch.tanh(x)", "std::tanh(x[i])"),
           "6_SiLU": ("F.silu(x)", "x[i] / (1.f + std::exp(-x[i]))")}


def candidate(kind: str, expression: str, number: int) -> str:
    tag = f"    const int64_t variant = {number}; (void)variant;\n"
    if kind == "broken":
        body = f"{tag}    for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = y[i];\n"
    elif kind == "wrong":
        body = f"{tag}    for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = x[i] + 1.f;\n"
    elif kind.startswith("slow:"):
        reps = int(kind.split(":")[1])
        body = (f"{tag}    const int64_t n = x_d0 * x_d1;\n    for (int rep = 0; rep < {reps}; ++rep)\n"
                f"        for (int64_t i = 0; i < n; ++i) {{ volatile float v = {expression}; out[i] = v; }}\n")
    else:
        raise ValueError(kind)
    return f"```cpp\n#include <cstdint>\n#include <cmath>\nextern \"C\" void kernel({ARGS}) {{\n{body}}}\n```"


class PlannedAgent:
    """Responder: the next planned candidate of the operator the request is about; lessons and
    reviews get fixed answers. `order` records (task, kind) of every candidate request."""

    def __init__(self, plans: dict[str, list[str]], delay_s: float = 0.0):
        self.plans = {task: list(plan) for task, plan in plans.items()}
        self.delay_s = delay_s
        self.kinds = ScriptedAgent([])
        self.order: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        kind = self.kinds.kind_of(body)
        if kind == "lesson":
            return Reply("Declare every name you use.")
        if kind == "review":
            return Reply("VERDICT: LEGITIMATE\nIt computes every element.")
        text = last_user_message(body)
        for task, (marker, expression) in MARKERS.items():
            if marker in text and task in self.plans:
                with self._lock:
                    self.order.append((task, kind))
                    plan = self.plans[task]
                    if not plan:
                        return Reply(status=500, error=f"the plan of {task} has no candidate left")
                    return Reply(candidate(plan.pop(0), expression, len(self.order)), delay_s=self.delay_s)
        return Reply("I do not know this operator.")
