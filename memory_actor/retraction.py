"""Taking back value updates: a resumed run redoes the operators it did not finish and throws
their attempts away, so the rewards those attempts gave must leave the bank too, or the bank
would have learned from attempts the run folder no longer holds.

An episode names its updates `RUN_ID/TASK/…` (update_prefix); `take_back(bank, prefixes)`
removes the effect of every update whose id starts with one of them. Q moves by an exponential
moving average, q' = q + a (t - q): each update row holds the target t (the advantage), the
values it left and the values it found (`before`), so the step a = (q' - q) / (t - q) is known
too, and each touched item's chain of updates from the first taken-back one on is recomputed
without them; the difference is applied to its current value (later updates keep their effect),
its visits drop by the shown ones, and the worked-example slot counts of those drafts are taken
back as well. Each taken-back update leaves a `retract` log row holding absolute values, like
every row (replay is idempotent), and a second take-back of the same update does nothing.

The rows are read from the log and from the history table, where a fold moves the update rows
it folded (store.archive_log): a run killed, its bank folded (closed, or written by another
campaign), then resumed, still takes its discarded attempts back. Only updates older than the
history keeps (`history_keep_rows`) stay; the reward statistics (normaliser, baselines) keep
every reward seen.

The items those attempts added go too (`take_back_items`): their traces and lessons (items of the
run, by `run_id`, and of a redone operator, by `task_id`) are deleted from the items table, so no
later prompt shows a kernel or a lesson of an attempt the run folder no longer holds; in an open
bank their rows are also hidden from retrieval, the worked-example slot and the children lists.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import structlog

from memory_actor.config import MemoryConfig
from memory_actor.index import STAGE_ROW
from memory_actor.slots import slot_success

log = structlog.get_logger("evokernel.memory.retraction")

RETRACT = "retract"


def update_prefix(run_id: str, task: str) -> str:
    """The start of the update ids an episode of TASK in run RUN_ID sends (actors.episode)."""
    return f"{run_id}/{task}/"


def update_rows(store: Any) -> list[dict[str, Any]]:
    """The bank's update, slot and retract rows (and the log's retrieval rows), from the history
    table and the log, once each, in sequence order."""
    rows = {row["seq"]: row for row in store.read_history().to_pylist()}
    rows.update((row["seq"], row) for row in store.read_log().to_pylist())
    return [rows[seq] for seq in sorted(rows)]


def take_back(bank: Any, prefixes: list[str]) -> int:
    """Undo the updates whose id starts with one of PREFIXES (see the module); returns how many."""
    rows = update_rows(bank.store)
    done = {row["ref_id"][len(RETRACT) + 1:] for row in rows if row["type"] == RETRACT}
    wanted = tuple(prefixes)
    targets = [row for row in rows if row["type"] == "update" and row["ref_id"].startswith(wanted)
               and row["ref_id"] not in done]
    if not targets:
        return 0
    gone = done | {row["ref_id"] for row in targets}
    steps = _steps(rows, bank)
    new_q: dict[tuple[str, str], float] = {}
    for key in {(item_id, row["stage"]) for row in targets for item_id in row["item_ids"]}:
        if key[0] not in bank.index.row_of:
            continue
        chain = steps.get(key, [])
        first = next((n for n, step in enumerate(chain) if step.update_id in gone), None)
        if first is None or chain[first].before is None:
            log.warning("a value update cannot be recomputed; its effect on Q stays", item=key[0], stage=key[1])
            continue
        chain = chain[first:]
        before = _chain(chain[0].before, chain, done)
        after = _chain(chain[0].before, chain, gone)
        stage_row, row = STAGE_ROW[key[1]], bank.index.row_of[key[0]]
        new_q[key] = float(bank.index.q[stage_row, row]) + after - before
    for row in targets:
        _retract(bank, row, new_q, rows)
    log.info("value updates taken back", updates=len(targets), prefixes=list(prefixes)[:5])
    return len(targets)


def _retract(bank: Any, update: dict[str, Any], new_q: dict[tuple[str, str], float],
             rows: list[dict[str, Any]]) -> None:
    stage, shown = update["stage"], update["shown"] if update.get("shown") is not None else len(update["item_ids"])
    stage_row = STAGE_ROW[stage]
    item_ids, q_values, visit_counts = [], [], []
    for position, item_id in enumerate(update["item_ids"]):
        row = bank.index.row_of.get(item_id)
        if row is None:
            continue
        q = new_q.get((item_id, stage), float(bank.index.q[stage_row, row]))
        visits = max(0, int(bank.index.visits[stage_row, row]) - (1 if position < shown else 0))
        bank.index.set_value(stage, row, q, visits)
        bank.dirty.add(item_id)
        item_ids.append(item_id)
        q_values.append(q)
        visit_counts.append(visits)
    bank.seq += 1
    bank.updates_applied -= 1
    bank.pending.append(bank._log_row(RETRACT, f"{RETRACT}:{update['ref_id']}", stage, item_ids=item_ids,
                                      q=q_values, visits=visit_counts, shown=min(shown, len(item_ids))))
    _take_back_slot(bank, update, rows)


def _take_back_slot(bank: Any, update: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """The slot counts the draft added (+1 trial per key, +1 success when rewarded) come off."""
    slot_rows = [row for row in rows if row["type"] == "slot" and row["ref_id"] == update["ref_id"]]
    slots = getattr(bank, "slots", None)
    if not slot_rows or slots is None:
        return
    success = slot_success(update["stage"], update.get("reward") or 0.0)
    changed = {}
    for key in slot_rows[-1]["item_ids"]:
        successes, trials = slots.get(key)
        slots.set(key, max(0, successes - success), max(0, trials - 1))
        changed[key] = slots.get(key)
    bank.seq += 1
    bank.pending.append(bank._log_row("slot", f"{RETRACT}:{update['ref_id']}", update["stage"],
                                      item_ids=list(changed), q=[float(s) for s, _ in changed.values()],
                                      visits=[n for _, n in changed.values()]))


@dataclass
class Step:
    """One update of one item's Q in one stage: q' = q + step (target - q), from `before`."""

    update_id: str
    step: float
    target: float
    before: float | None


def _steps(rows: list[dict[str, Any]], bank: Any) -> dict[tuple[str, str], list[Step]]:
    """Per (item, stage): every update in ROWS as a Step, in order (the history as it happened,
    taken-back updates and the values their retract rows set included). Rows written before
    `before` was logged take it from the previous row of the item, or, past the last fold, from
    the items table."""
    folded_seq = int(bank.store.read_meta().get("folded", {}).get("seq", 0))
    folded: dict[tuple[str, str], float] | None = None
    value: dict[tuple[str, str], float] = {}
    steps: dict[tuple[str, str], list[Step]] = defaultdict(list)
    for row in rows:
        if row["type"] not in ("update", RETRACT):
            continue
        befores = row.get("before") or [None] * len(row["item_ids"])
        for item_id, q, before in zip(row["item_ids"], row["q"], befores, strict=True):
            key = (item_id, row["stage"])
            if before is None:
                before = value.get(key)
            if before is None and row["seq"] > folded_seq:
                folded = _folded_values(bank) if folded is None else folded
                before = folded.get(key)
            value[key] = q
            if row["type"] == RETRACT:
                continue
            target = row["advantage"] if row.get("advantage") is not None else row["applied"]
            known = before is not None and abs(target - before) > 1e-12
            steps[key].append(Step(row["ref_id"], (q - before) / (target - before) if known else bank.config.alpha,
                                   target, before))
    return steps


def _folded_values(bank: Any) -> dict[tuple[str, str], float]:
    """Each item's Q per stage as the items table holds it: the value before the log's updates."""
    table = bank.store.read_items().select(["id", "q_draft", "q_refine"]).to_pylist()
    return {**{(row["id"], "draft"): row["q_draft"] or 0.0 for row in table},
            **{(row["id"], "refine"): row["q_refine"] or 0.0 for row in table}}


def _chain(start: float, steps: list[Step], skipped: set[str]) -> float:
    q = start
    for step in steps:
        if step.update_id not in skipped:
            q += step.step * (step.target - q)
    return q


RETRACTED_KINDS = ("trace", "experience")  # what an attempt adds: its trace and its lessons
_HIDDEN = -2  # a backend code no query has (unknown backends are -1)


def take_back_items(bank: Any, run_id: str, tasks: list[str]) -> int:
    """Delete the traces and lessons run RUN_ID added for TASKS (see the module); returns how many.
    Run after `take_back`, which needs the items to recompute the values they were shown with."""
    from memory_actor.disk.bank_errors import write_failure

    wanted = set(tasks)
    ids = [item_id for item_id, item in bank.items.items()
           if item.run_id == run_id and item.task_id in wanted and item.kind in RETRACTED_KINDS
           and item_id in bank.index.row_of and bank.index.backend[bank.index.row_of[item_id]] != _HIDDEN]
    if not ids:
        return 0
    store = bank.store
    store._writable()  # noqa: SLF001 - the store's own guard: a read-only bank refuses
    try:
        for start in range(0, len(ids), 500):
            store.items.delete("id IN (" + ", ".join(f"'{item_id}'" for item_id in ids[start:start + 500]) + ")")
    except Exception as exc:
        raise write_failure(exc, store.uri) from exc
    gone = set(ids)
    for item_id in ids:  # and out of an open bank's reach: never retrieved, offered or folded back
        row = bank.index.row_of[item_id]
        bank.index.backend[row] = _HIDDEN
        bank.index.feasible[row] = False
        bank.dirty.discard(item_id)
    for key, kernel_ids in bank.slot_kernels.items():
        bank.slot_kernels[key] = [item_id for item_id in kernel_ids if item_id not in gone]
    for parent, children in bank.children_of.items():
        bank.children_of[parent] = [item_id for item_id in children if item_id not in gone]
    bank.flushes_since_fold += 1  # a delete is a table version too
    log.info("items taken back", items=len(ids), run_id=run_id, tasks=sorted(wanted)[:5])
    return len(ids)


def take_back_updates(config: MemoryConfig, prefixes: list[str], owner: str | None = None) -> int:
    """Open the bank at CONFIG as its writer, take back the updates under PREFIXES, close it."""
    from memory_actor.bank import MemoryBank  # the bank imports the embedder: only when needed

    bank = MemoryBank(config.model_copy(update={"preload_embedder": False}), owner=owner)
    try:
        return take_back(bank, prefixes)
    finally:
        bank.close()


def take_back_attempts(config: MemoryConfig, run_id: str, tasks: list[str],
                       owner: str | None = None) -> tuple[int, int]:
    """What a resume does before it redoes TASKS of run RUN_ID: their value updates taken back,
    then their traces and lessons deleted; (updates, items)."""
    from memory_actor.bank import MemoryBank

    bank = MemoryBank(config.model_copy(update={"preload_embedder": False}), owner=owner)
    try:
        updates = take_back(bank, [update_prefix(run_id, task) for task in tasks])
        return updates, take_back_items(bank, run_id, tasks)
    finally:
        bank.close()
