"""The hint of a run whose every attempt failed alike (a setup problem, not the model's luck):
which gate, why, and the likely fix; `evokernel run` prints it and the report shows it."""

from __future__ import annotations

from pydantic import BaseModel, Field

from actors.messages import Attempt


class SameFailure(BaseModel):
    """Every attempt of every operator failed at one gate for one reason: a setup problem."""

    gate: str
    category: str
    attempts: int
    operators: int
    reason: str = Field("", description="the reason of the last such attempt")
    candidate_format: str | None = None
    likely_fix: str = ""

    def sentence(self) -> str:
        return (f"every attempt failed the same way: {self.attempts} of {self.attempts} attempts over "
                f"{self.operators} operator(s) at the {self.gate} gate ({self.category}: {self.reason[:160]}). "
                f"Likely fix: {self.likely_fix}")


def _likely_fix(gate: str, category: str, reason: str, fmt: str | None, reply_file: str | None = None) -> str:
    other = "kernel" if fmt == "modelnew" else "modelnew"
    if gate == "no_code":
        seen = f" (what it wrote instead: RUN_DIR/{reply_file})" if reply_file else ""
        return (f"the model did not answer in the {fmt} candidate format it was asked for{seen} (a remote endpoint "
                f"gets `modelnew` by default, a small model `kernel`): run again with `--candidate-format {other}`, "
                "or with a model that follows the format")
    if gate == "llm" and "answered with a tool call" in reason:  # actors.llm_client.LLMToolCallReply
        return ("the endpoint turns the model's answers into tool calls (none was offered): serve the model "
                "without a tool-call parser (vLLM: leave out --enable-auto-tool-choice and --tool-call-parser); "
                "the candidate format is not the cause")
    if gate == "llm":
        return ("the LLM endpoint refused or failed every request: check --llm-base-url, --llm-model and "
                "OPENAI_API_KEY (`evokernel doctor` tries them)")
    if gate == "infra":
        return "the machine, not the candidates: run `evokernel doctor` and install what it says is missing"
    if gate == "compile":
        return (f"no candidate compiled: the model may not know this backend's {fmt} format; try "
                f"`--candidate-format {other}` or a stronger model, and read one compiler error in attempts.jsonl")
    if gate == "hack":
        return (f"the anti-hack gate rejects every candidate ({category}): the model keeps doing what the "
                "prompt forbids; try a stronger model (docs/antihack.md lists the rules)")
    if gate == "repeat":
        return "the model repeats the same code: raise llm.temperature or use a stronger model"
    return "read one attempt's reason in attempts.jsonl; `evokernel verify` reproduces a verdict"


def same_failure(attempts: list[Attempt]) -> SameFailure | None:
    """The failure every attempt shares (gate and category), where there are several attempts,
    none feasible, and all fail alike; else None."""
    if len(attempts) < 2 or any(a.feasible for a in attempts):
        return None
    kinds = {(a.gate, a.category) for a in attempts}
    if len(kinds) != 1:
        return None
    gate, category = kinds.pop()
    last = attempts[-1]
    return SameFailure(gate=gate, category=category, attempts=len(attempts),
                       operators=len({a.task for a in attempts}), reason=last.reason,
                       candidate_format=last.candidate_format,
                       likely_fix=_likely_fix(gate, category, last.reason, last.candidate_format, last.reply_file))
