"""Lessons: what an operator's attempts teach, as short experience items.

Every failed attempt leaves a failure record built without a model: the gate, the first
compiler error or the exception raised (its type and message: a C++ exception's what(), the
end of a Python traceback) and the candidate's line it points at. Where the model's settings
allow lessons (`episode.lessons`), the model's few lines follow the deterministic ones, and
faster refinements get a model lesson too.

A failure record is never shown to another operator (tag `lesson:failure`, memory_actor/scope.py):
v3 showed "37_Cumsum ... expected -179.707, got 0.0688" 62 times to every family and it taught
nothing. What is shown, to operators of the same family only, is a lesson that says what to do
(`lesson:fix`): when a draft passes after a failed one, what changed between them, the failure's
first error beside the lines that replaced it ("a compiler error paired with its fix"); and what
made a refinement faster (`lesson:faster`). They earn their place through values like every item.

A lesson is shared (retrieved into later prompts, sent to the LLM endpoint, exported with the
bank), so it holds only what the harness says about the candidate's own code: the gate and
category, the first line of an error or an exception's message, the offending line of the
candidate's source, mismatch statistics; each line scrubbed of secrets (npu_pool.redaction)
before it is cut to 200 characters (a cut secret is no longer recognised), never a whole
log or another file's text (docs/harness.md, "What a lesson may contain").
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from actors.messages import Feedback, LessonRequest, Stage, TaskBrief
from actors.ports import MemoryPort, WorkerPort
from memory_actor.items import MemoryItem
from npu_pool.backends import latency_unit, timing_kind
from npu_pool.redaction import scrub

# `kernel.cpp:3:48: error: ...` (g++, nvcc, bisheng), with or without the column.
_DIAGNOSTIC = re.compile(r"(?P<file>[\w./\\-]+):(?P<line>\d+):(?:\d+:)?\s*(?:fatal )?error:\s*(?P<message>.+)")
# g++ echoes the offending line after the diagnostic: `    3 |     out[i] = y[i];`
_ECHO = re.compile(r"^\s*(?P<line>\d+)\s*\|\s?(?P<text>.*)$")
# The source the kernel route compiles is named kernel.cpp (npu_pool's `#line 1 "kernel.cpp"`).
KERNEL_FILE = "kernel.cpp"
# An uncaught C++ exception: `terminate called after throwing an instance of 'std::runtime_error'`
# then `  what():  <message>` (libstdc++'s words, on the crashed process's stderr).
_CXX_THROW = re.compile(r"terminate called after throwing an instance of '(?P<type>[^']+)'")
_CXX_WHAT = re.compile(r"^\s*what\(\):\s*(?P<message>.*)$")
# A Python traceback's frame line, and the `Type: message` line that ends it.
_PY_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+)')
_PY_RAISED = re.compile(r"^[A-Za-z_][\w.]*(?::.*)?$")
# The worker writes a ModelNew candidate's source to candidate.py before executing it.
MODELNEW_FILE = "candidate.py"
LINE_CHARS = 200
LESSON_CHARS = 700
FIX_DIFF_LINES = 14  # changed lines a fix lesson keeps: what changed, not the whole kernel


@dataclass(frozen=True)
class Failure:
    """What the harness said about a failed attempt."""

    stage: Stage
    gate: str
    category: str
    reason: str
    details: str
    code: str


def _short(text: str, limit: int = LINE_CHARS) -> str:
    """One line of at most `limit` characters, scrubbed before it is cut (a cut secret would
    no longer be recognised)."""
    text = " ".join(scrub(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def raised_exception(details: str, code: str = "") -> tuple[str, str | None] | None:
    """("Type: message", the candidate's line it was raised from, if known) of the exception a
    crash's details show: a C++ exception's `what()`, or the end of a Python traceback; None
    when they show none (a signal, a timeout)."""
    lines = details.splitlines()
    for i, line in enumerate(lines):
        thrown = _CXX_THROW.search(line)
        if thrown is not None:
            what = next((m["message"] for m in map(_CXX_WHAT.match, lines[i + 1: i + 3]) if m), "")
            return f"{thrown['type']}: {what.strip()}".rstrip(": "), None
    frames = [(i, _PY_FRAME.match(line)) for i, line in enumerate(lines)]
    frames = [(i, m) for i, m in frames if m is not None]
    if not frames:
        return None
    last = frames[-1][0]
    message = next((line for line in lines[last + 1:] if line and not line[0].isspace()), "")
    if not _PY_RAISED.match(message):
        return None
    offending = None
    own = [m for _, m in frames if m["file"].endswith(MODELNEW_FILE)]
    if own and 0 < int(own[-1]["line"]) <= len(code.splitlines()):
        offending = code.splitlines()[int(own[-1]["line"]) - 1]
    return message.strip(), offending


def _exception_lines(raised: tuple[str, str | None], first: str) -> list[str]:
    message, offending = raised
    lines = [] if _short(message)[:60] in first else [f"Exception: {_short(message)}"]  # reasons often quote it
    if offending is not None and offending.strip():
        lines.append(f"Raised at: {_short(offending.strip())}")
    return lines


def compiler_error(details: str, code: str) -> tuple[str, str | None] | None:
    """(the first error message, the offending source line) from a compiler log, or None."""
    lines = details.splitlines()
    for i, line in enumerate(lines):
        match = _DIAGNOSTIC.search(line)
        if match is None:
            continue
        number = int(match["line"])
        offending = None
        if match["file"].endswith(KERNEL_FILE) and 0 < number <= len(code.splitlines()):
            offending = code.splitlines()[number - 1]
        else:  # another file (a ModelNew extension's build): take the line the compiler echoed
            for after in lines[i + 1: i + 3]:
                echo = _ECHO.match(after)
                if echo and int(echo["line"]) == number:
                    offending = echo["text"]
                    break
        where = f"line {number}: " if offending is not None else ""
        return f"{where}error: {match['message'].strip()}", offending
    return None


def failure_lesson(task_id: str, failure: Failure) -> str:
    """A few deterministic lines: the gate, the first error, the offending line."""
    lines = [f"{task_id} {failure.stage} attempt failed at the {failure.gate} gate ({failure.category}): "
             f"{_short(failure.reason)}"]
    details = failure.details or ""
    if failure.gate == "compile":
        found = compiler_error(details, failure.code)
        if found is not None:
            message, offending = found
            lines.append(f"First error: {_short(message)}")
            if offending is not None and offending.strip():
                lines.append(f"Offending line: {_short(offending.strip())}")
        elif (raised := raised_exception(details, failure.code)) is not None:  # raised while importing
            lines += _exception_lines(raised, lines[0])
        elif details.strip():
            lines.append(f"First error: {_short(details.strip().splitlines()[0])}")
    elif failure.gate == "correctness":
        # The worst element (expected vs got) and a constant ratio say what to fix.
        picked = [line for line in details.splitlines()
                  if line.lstrip().startswith(("max abs diff", "ratio got/expected", "offset got-expected"))
                  or "NaN/inf" in line]
        lines += [_short(line.strip()) for line in picked[:3]]
    elif (raised := raised_exception(details, failure.code)) is not None:  # the exception's own words
        lines += _exception_lines(raised, lines[0])
    elif details.strip():  # hack, signals, timeouts: the first line says what happened
        first = next((line for line in details.splitlines() if line.strip()), "")
        if first and _short(first) not in lines[0]:
            lines.append(f"First error: {_short(first)}")
    return scrub("\n".join(lines))[:LESSON_CHARS]


def changed_lines(failed_code: str, passing_code: str, limit: int = FIX_DIFF_LINES) -> list[str]:
    """The lines that differ between a failed and a passing attempt ('- old', '+ new'), blank
    and comment-only lines left out, at most `limit`."""
    def meaningful(code: str) -> list[str]:
        return [line.strip() for line in code.splitlines() if line.strip() and not line.strip().startswith("//")]

    diff = difflib.unified_diff(meaningful(failed_code), meaningful(passing_code), lineterm="", n=0)
    lines = [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    return [f"{line[0]} {_short(line[1:])}" for line in lines[:limit]]


def fix_lesson(task_id: str, family: str, failed: Feedback, passing_code: str) -> str | None:
    """What changed between a failed draft and the next one that passed, or None when nothing
    changed that a line diff shows."""
    changes = changed_lines(failed.code or "", passing_code)
    if not changes:
        return None
    first = ""
    if failed.gate == "compile":
        found = compiler_error(failed.details, failed.code or "")
        first = f" First error: {_short(found[0])}." if found else ""
    lines = [f"{family} kernel ({task_id}): a draft failed at the {failed.gate} gate ({_short(failed.reason, 160)})."
             f"{first} The next draft passed; what changed:", *changes]
    return scrub("\n".join(lines))[:LESSON_CHARS]


class LessonWriter:
    """Builds an operator's lessons and stores them as experience items under their trace."""

    def __init__(self, memory: MemoryPort, brief: TaskBrief, run_id: str):
        self.memory, self.brief, self.run_id = memory, brief, run_id

    async def failed(self, failure: Failure, trace_id: str | None, worker: WorkerPort | None,
                     start_code: str | None = None) -> tuple[str | None, tuple[int, int]]:
        """Store the lesson of a failed attempt (the model's lines too when `worker` is given);
        returns its id and the tokens the model spent."""
        text = failure_lesson(self.brief.task_id, failure)
        tokens = (0, 0)
        if worker is not None:
            outcome = scrub(f"failed at the {failure.gate} gate: {failure.reason}\n{failure.details}".strip())
            lesson = await worker.lesson(LessonRequest(task=self.brief, stage=failure.stage, code=failure.code,
                                                       outcome=outcome, start_code=start_code))
            tokens = (lesson.tokens_prompt, lesson.tokens_completion)
            if lesson.text:
                text = f"{text}\n{scrub(lesson.text)}"
        summary = f"{self.brief.task_id}: why it failed ({failure.gate})"
        return await self._store(failure.stage, text, summary, trace_id, "failure"), tokens

    async def fixed(self, failed: Feedback, passing_code: str, trace_id: str | None) -> str | None:
        """Store what changed between a failed draft and the draft that passed after it."""
        family = self.brief.family
        text = fix_lesson(self.brief.task_id, family, failed, passing_code)
        if text is None:
            return None
        return await self._store("draft", text, f"{family}: what changed to pass ({failed.gate})", trace_id, "fix")

    async def faster(self, stage: Stage, code: str, start_code: str | None, before_ms: float, after_ms: float,
                     trace_id: str | None, worker: WorkerPort) -> tuple[str | None, tuple[int, int]]:
        """Ask the model what made a refinement faster; store its answer, if any."""
        unit = latency_unit(timing_kind(self.brief.backend))
        lesson = await worker.lesson(LessonRequest(task=self.brief, stage=stage, code=code, improved=True,
                                                   outcome=f"faster: {before_ms:.4g} -> {after_ms:.4g} {unit}",
                                                   start_code=start_code))
        tokens = (lesson.tokens_prompt, lesson.tokens_completion)
        if not lesson.text:
            return None, tokens
        return await self._store(stage, scrub(lesson.text), f"{self.brief.task_id}: what made it faster",
                                 trace_id, "faster"), tokens

    async def _store(self, stage: Stage, text: str, summary: str, trace_id: str | None, lesson: str) -> str:
        """`lesson`: failure (a record, never shown to another operator), fix or faster (shown to
        the family's operators, memory_actor/scope.py)."""
        tags = [f"lesson:{lesson}", f"family:{self.brief.family}"]
        item = MemoryItem(kind="experience", backend=self.brief.backend, task_id=self.brief.task_id,
                          task_signature=self.brief.signature or "", stage=stage, content=text, summary=summary,
                          parent_id=trace_id, run_id=self.run_id, tags=tags)
        [item_id] = await self.memory.add([item])
        return item_id
