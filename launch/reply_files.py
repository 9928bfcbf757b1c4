"""RUN_DIR/replies/: what the model wrote where no candidate could be taken from its reply.

A draft or refinement whose reply held no usable code (no block defining the entry point, a
reply cut off inside the code) is judged `no_code` without anything being built, so the reply
is the only thing that says why. Its text (secrets scrubbed, bounded) is kept as
`replies/<task>/<iteration>-<stage>.md`, and the attempt's line in attempts.jsonl names the file
(`reply_file`, relative to RUN_DIR). An operator that starts again (a resume of an operator cut
short) drops what its earlier try left, as kernels/ does. A reply that cannot be written (a full
disk) is logged and left out: the attempt's own line is what must not be lost.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import structlog

from actors.messages import Attempt
from launch.atomic_file import write_atomically
from launch.kernel_files import folder_name
from npu_pool.redaction import scrub

log = structlog.get_logger("evokernel.replies")

REPLIES_DIR = "replies"
REPLY_LIMIT = 20_000  # characters kept of one reply (llm.max_tokens of code is far less)


class ReplyFolder:
    """RUN_DIR/replies/ (the module's docstring)."""

    def __init__(self, run_dir: Path):
        self.run_dir = run_dir
        self.path = run_dir / REPLIES_DIR

    def operator_started(self, task: str) -> None:
        shutil.rmtree(self.path / folder_name(task), ignore_errors=True)

    def record(self, attempt: Attempt) -> Attempt:
        """ATTEMPT with `reply_file` set where its reply was kept (the reply travels with the attempt
        from the worker and is left out of attempts.jsonl)."""
        if not attempt.reply:  # set only where no code came of the reply (IterationOutcome.attempt)
            return attempt
        file = self.path / folder_name(attempt.task) / f"{attempt.iteration}-{attempt.stage}.md"
        header = (f"# {attempt.task}, iteration {attempt.iteration} ({attempt.stage}): {attempt.reason[:300]}\n\n"
                  "The model's reply as it came (secrets scrubbed):\n\n")
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(file, header + scrub(attempt.reply, REPLY_LIMIT) + "\n")
        except OSError as exc:
            log.warning("reply_file_failed", task=attempt.task, error=f"{type(exc).__name__}: {exc}"[:300])
            return attempt
        return attempt.model_copy(update={"reply_file": file.relative_to(self.run_dir).as_posix()})
