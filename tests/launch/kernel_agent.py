"""A scripted LLM for campaigns over elementwise suite tasks: real kernel-format C for each.

The responder reads which operator a request is about from the reference source in the
prompt (`torch.relu(x)`, ...) and answers a correct kernel for it (optionally after a
delay, like a remote model), a fixed lesson, or a LEGITIMATE review. Used by the campaign
tests and by bench/campaign.py, with tests/actors/openai_server.py as the HTTP server.
"""

from __future__ import annotations

import threading
from typing import Any

from tests.actors.openai_server import Reply, ScriptedAgent, last_user_message

SUITE_TASKS = ("4_ReLU", "6_SiLU", "7_Sigmoid", "8_Tanh")
# reference marker -> the element expression of a correct kernel
ELEMENTWISE = {
    "torch.relu(x)": "x[i] > 0.f ? x[i] : 0.f",
    "F.silu(x)": "x[i] / (1.f + std::exp(-x[i]))",
    "torch.sigmoid(x)": "1.f / (1.f + std::exp(-x[i]))",
    "torch.tanh(x)": "std::tanh(x[i])",
}
ARGS = "const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1"


def kernel_reply(expression: str, variant: int = 0) -> str:
    """The kernel; a refinement is variant N (a distinct source: the episode never evaluates
    the same code twice), drafts are variant 0 (compiled once, then served from the cache)."""
    tag = f"    const int64_t variant = {variant}; (void)variant;\n" if variant else ""
    return f"""```cpp
#include <cstdint>
#include <cmath>
extern "C" void kernel({ARGS}) {{
{tag}    const int64_t n = x_d0 * x_d1;
    #pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) out[i] = {expression};
}}
```"""


class ElementwiseAgent:
    """Responder: a correct kernel for the operator in the prompt, after `delay_s`."""

    def __init__(self, delay_s: float = 0.0, fail_with: int | None = None):
        self.delay_s = delay_s
        self.fail_with = fail_with  # answer every request with this HTTP status (endpoint trouble)
        self.kinds = ScriptedAgent([])
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        kind = self.kinds.kind_of(body)
        with self._lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1
        if self.fail_with is not None:
            return Reply(status=self.fail_with, error="scripted outage")
        if kind == "lesson":
            return Reply("Write every output element; keep the loop simple.", delay_s=self.delay_s)
        if kind == "review":
            return Reply("VERDICT: LEGITIMATE\nIt computes every element.", delay_s=self.delay_s)
        text = last_user_message(body)  # the task's turn (earlier user turns are the worked example)
        for marker, expression in ELEMENTWISE.items():
            if marker in text:
                return Reply(kernel_reply(expression, self.counts[kind] if kind == "refine" else 0),
                             delay_s=self.delay_s)
        return Reply("I do not know this operator.", delay_s=self.delay_s)
