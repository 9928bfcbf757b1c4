"""The learning benchmark's frozen evaluation: fresh first drafts against a frozen bank, in the
screening (the seeded bank, retrieval none) and the evaluation (each arm's bank after its
learning pass, k passes of one draft per held-out operator, arms interleaved pass by pass).

Frozen means three things, each enough on its own to keep the bank as the learning pass left it:
the bank is opened read-only (`MemoryBank(read_only=True)`: its store refuses every write, and
nothing is written on open or close); the episode's memory port is `ReadOnlyMemory`, which
answers reads and drops writes (no new items, no value updates, so one draft cannot change what
the next one sees); and the bank's content is digested before and after every pass, a change
stopping the benchmark (`FrozenBankChanged`). A draft pass is a campaign of one iteration per
operator (the draft, no refinement), resumable operator by operator like any campaign.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from bench.learning.plan import ARMS
from bench.learning.publish import note_commit
from launch.campaign import Campaign, CampaignError, finished_operators, load_summary
from memory_actor.items import MemoryItem

# A pass whose drafts the machine failed to judge drafts them again, at most this many rounds a start.
REDRAW_ROUNDS = 3
REDRAW_PAUSE_S = 60.0


class FrozenBankChanged(RuntimeError):
    """A pass that must not change its bank did."""


class ReadOnlyMemory:
    """The memory port of a frozen bank. Reads go to the bank; `add` and `update` are dropped
    (add answers the ids the items would have had, update answers None, as a dropped update
    does elsewhere). Any other method is refused by name: a new write must not slip through."""

    READS = frozenset({"retrieve", "get", "children", "api_items"})
    WRITES = frozenset({"add", "update"})

    def __init__(self, port: Any):
        self._port = port
        self.dropped: dict[str, int] = {"add": 0, "update": 0}

    async def add(self, items: list[MemoryItem]) -> list[str]:
        self.dropped["add"] += len(items)
        return [item.id for item in items]

    async def update(self, update: Any) -> None:
        self.dropped["update"] += 1
        return None

    def __getattr__(self, name: str) -> Any:
        if name in self.READS:
            return getattr(self._port, name)
        raise AttributeError(f"the frozen bank's memory port has no {name!r}: list it in "
                             "bench/learning/evaluation.ReadOnlyMemory as a read (passed on) or a write (dropped)")


def bank_digest(uri: Path, settings) -> str:
    """sha256 of what a reader of the bank sees: every item with its values (ids sorted) and
    the folded state (reward baselines, update count)."""
    from memory_actor.bank import MemoryBank

    bank = MemoryBank(settings.memory.model_copy(update={"uri": str(uri)}), read_only=True)
    try:
        rows = sorted(bank.export_rows(), key=lambda row: row["id"])
        state = {"seq": bank.seq, "updates": bank.updates_applied, "meta": bank.store.read_meta()}
    finally:
        bank.close()
    return hashlib.sha256(json.dumps([rows, state], sort_keys=True, default=str).encode()).hexdigest()


class FrozenCampaign(Campaign):
    """A campaign whose memory is the bank at settings.memory.uri, opened read-only behind
    ReadOnlyMemory; everything else is Campaign's own."""

    port: ReadOnlyMemory | None = None

    def _open_bank(self) -> Any:
        """Read-only: never as its writer (no lease taken, nothing written on open or close)."""
        from memory_actor.bank import MemoryBank

        return MemoryBank(self.settings.memory, read_only=True)

    async def _components(self, stack: AsyncExitStack) -> tuple[Any, Any, Any, Any]:
        memory, drafter, refiner, evaluator = await super()._components(stack)
        self.port = ReadOnlyMemory(memory)
        return self.port, drafter, refiner, evaluator


def draft_settings(settings, memory: dict[str, Any], bank: Path, seed: int, start_from_rung: bool = False):
    """One draft per operator, no lessons (they would only add items, which a frozen bank drops),
    no forced start (the memory's decision alone says what a fresh draft shows; the pilot's `rung`
    arm alone starts from the family's first rung, bench/learning/pilot.py), the memory of the arm
    on `bank`."""
    from bench.learning.plan import arm_memory

    return settings.model_copy(update={
        "memory": arm_memory(settings, memory, bank, seed),
        # the pass's draws: every arm of a pass asks with the same sequence of sampling seeds (paired
        # draws), each pass with its own (fresh draws), recorded per draft (issue 64.5)
        "llm": settings.llm.model_copy(update={"seed": seed}),
        "episode": settings.episode.model_copy(update={"iterations": 1, "lessons": False,
                                                           "start_from_rung": start_from_rung}),
    })


def finished(run_dir: Path) -> bool:
    """Whether the pass (a campaign) in `run_dir` ran to its end without an error."""
    summary = run_dir / "summary.json"
    if not summary.is_file():
        return False
    data = json.loads(summary.read_text())
    return bool(data.get("finished_at")) and not data.get("error")


def run_draft_pass(settings, run_dir: Path, bank: Path, memory: dict[str, Any], tasks: list[Path], seed: int,
                   run_id: str, start_from_rung: bool = False) -> bool:
    """One fresh draft of every task against the frozen `bank`; skipped when finished, resumed
    at its first unfinished operator otherwise. Returns whether it ran now. Raises
    FrozenBankChanged when the bank's content differs afterwards."""
    if finished(run_dir) and not unjudged(run_dir):
        return False
    pass_settings = draft_settings(settings, memory, bank, seed, start_from_rung)
    before = bank_digest(bank, settings)
    for round_ in range(REDRAW_ROUNDS):
        if round_:  # drafts the machine failed to judge (an episode error): drawn again after a pause
            print(f"[learning] {run_dir.name}: {', '.join(unjudged(run_dir))} not judged (an error, not a "
                  f"verdict): drafting again in {REDRAW_PAUSE_S:.0f} s", file=sys.stderr)
            time.sleep(REDRAW_PAUSE_S)
        campaign: Campaign | None = None
        if (run_dir / "summary.json").is_file():
            try:
                campaign, _ = FrozenCampaign.resume(pass_settings, run_dir)
            except CampaignError as exc:
                print(f"[learning] {run_dir.name}: cannot resume ({exc}); drafting again", file=sys.stderr)
        if campaign is None:
            for stale in ("attempts.jsonl", "summary.json"):
                (run_dir / stale).unlink(missing_ok=True)
            campaign = FrozenCampaign(pass_settings, run_dir, run_id=run_id)
        print(f"[learning] {run_dir.name}: {memory}, seed {seed}, {len(tasks)} draft(s) against {bank.name}",
              file=sys.stderr)
        asyncio.run(campaign.run(tasks))
        if bank_digest(bank, settings) != before:
            raise FrozenBankChanged(f"{bank} changed during {run_dir.name}: a frozen bank must not")
        if not unjudged(run_dir):
            break
    return True


def unjudged(run_dir: Path) -> list[str]:
    """Operators of a finished pass that ended in an error instead of a verdict (a sandbox server
    that could not start on a starved machine, say): a rerun drafts them again. A task that did
    not load is not among them (it never will: no evidence, left out)."""
    summary = load_summary(run_dir) if (run_dir / "summary.json").is_file() else None
    if summary is None or not summary.finished_at:
        return []
    kept = {op.task for op in finished_operators(summary.operators)}
    return [op.task for op in summary.operators if op.task not in kept
            and not (op.error or "").startswith("task load") and op.stopped_by != "interrupted"]


def evaluate_frozen(settings, out: Path, arms: list[str], heldout: list[Path], digests: dict[str, str],
                    drafts: int, seed: int, memories: dict[str, dict[str, Any]] | None = None) -> None:
    """The evaluation: `drafts` passes of one fresh draft per held-out operator against each
    arm's frozen bank (banks/learn-<arm>), arms interleaved pass by pass so that the machine's
    load falls on every arm alike; each bank checked against its digest before every pass. An
    arm's memory settings are `memories[arm]`, else ARMS[arm]."""
    for r in range(drafts):
        for arm in arms:
            bank = out / "banks" / f"learn-{arm}"
            if bank_digest(bank, settings) != digests[arm]:
                raise FrozenBankChanged(f"{bank} is not the bank its learning pass left (frozen.json)")
            run_dir = out / "arms" / f"eval-{arm}-d{r}"
            if not finished(run_dir):
                note_commit(run_dir, "resumed" if (run_dir / "summary.json").is_file() else "started")
            run_draft_pass(settings, run_dir, bank, (memories or {}).get(arm, ARMS[arm]), heldout, seed + 100 + r,
                           f"{out.name}-eval-{arm}-d{r}")  # the folder names design and domain


def draft_outcomes(run_dir: Path) -> dict[str, bool]:
    """task -> whether its draft was feasible, for the operators the pass finished; a task
    whose file did not load, or whose draft the machine failed to judge (gate infra), is left
    out: it is no evidence about the model."""
    operators = finished_operators(load_summary(run_dir).operators)
    machine_failed = _infra_only(run_dir)
    return {op.task: op.feasible for op in operators
            if not (op.error or "").startswith("task load") and op.task not in machine_failed}


def _infra_only(run_dir: Path) -> set[str]:
    """Tasks whose every attempt in the pass ended at the infra gate (the machine, not the model)."""
    gates: dict[str, set[str]] = {}
    path = run_dir / "attempts.jsonl"
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                attempt = json.loads(line)
            except ValueError:
                continue
            gates.setdefault(attempt.get("task", ""), set()).add(attempt.get("gate") or "none")
    return {task for task, seen in gates.items() if seen == {"infra"}}


def gate_counts(run_dir: Path) -> dict[str, int]:
    """Attempts of a pass by the gate that stopped them ('ok' for feasible ones)."""
    counts: dict[str, int] = {}
    path = run_dir / "attempts.jsonl"
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                gate = json.loads(line).get("gate") or "none"
            except ValueError:
                continue
            counts[gate] = counts.get(gate, 0) + 1
    return counts
