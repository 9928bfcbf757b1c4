"""A run's time budget (`evokernel run --hours H`, `run.hours`; issue 67): operators in turns, the
next attempt where the expected gain per attempt is highest, and an end at the budget.

Both campaigns draw their operators from a `TurnQueue`. Without a budget it hands out the planned
operators once each, in order (the run is what it always was). With one, it hands out *turns*: the
operator whose next attempt is worth most (`expected_gain`) runs until its own worth falls below the
best waiting operator's (by more than `HYSTERESIS`, after at least one attempt), then its episode is
suspended (actors/episode_turns.py: the state goes into RUN_DIR/turns/<task>.json, and a log line
`operator_moved_down` says why) and the other one runs. An attempt starts only while the measured
median attempt time fits in what is left of the budget; when it does not, the turn ends `budget`,
no turn starts after it, and the run ends as a stopped run does: summary.json written, the
operators the budget stopped listed with `stopped_by: budget` (their figures so far; their state
kept), the resume line printed. `evokernel run --resume RUN_DIR` continues them from their state,
with what is left of `run.hours` (the budget is the run's total wall time over its sessions: a
larger `--hours` on the resume gives it more). Iterations, tokens and wall time per operator stay
caps, and the stop rules (actors/stops.py) end operators as they do without a budget.

The expected gain of an operator's next attempt, and why: launch/budget_worth.py.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import structlog

from actors.episode_turns import EpisodeState
from actors.messages import EpisodeResult
from launch.budget_worth import Gain, RunRates, episode_gain, state_gain

log = structlog.get_logger("evokernel.budget")

MOVED_DOWN = "moved_down"  # an episode's turn ended for a more promising operator (never a final stopped_by)
BUDGET = "budget"  # EpisodeResult.stopped_by of an operator the time budget stopped (a resume continues it)
SUSPENDED = "suspended"  # ... of one waiting for its next turn when a stop (Ctrl-C) came (a resume continues it)
CONTINUED = (BUDGET, SUSPENDED)  # a resume continues these from their state (RUN_DIR/turns/)
TURNS_FOLDER = "turns"

HYSTERESIS = 0.1  # an operator yields only to one worth more than 1/(1 - 0.1) times its own next attempt
ESTIMATE_AFTER = 3  # attempts measured before an end time is estimated


class TurnPace:
    """Asked by the episode before each attempt of a turn (actors.episode.Episode.pace): `budget` when
    the next attempt would not end within the budget, `moved_down` when the best waiting operator's
    next attempt is worth clearly more than this one's, else None. Picklable: it travels with a Ray
    episode task."""

    def __init__(self, deadline: float, bar: Gain | None, bar_task: str | None, attempt_s: float | None,
                 rates: RunRates):
        self.deadline, self.bar, self.bar_task = deadline, bar, bar_task
        self.attempt_s, self.rates = attempt_s, rates
        self.started_with: int | None = None

    async def __call__(self, episode: Any) -> str | None:
        done = len(episode.attempts)
        if self.started_with is None:
            self.started_with = done
        left = self.deadline - time.time()
        if left <= 0 or (self.attempt_s is not None and left < self.attempt_s):
            episode.log.info("operator_budget_stop", seconds_left=round(max(left, 0.0)),
                             attempt_s=None if self.attempt_s is None else round(self.attempt_s))
            return BUDGET
        if self.bar is None or done == self.started_with:
            return None
        gain = episode_gain(episode, self.rates)
        if gain.value < self.bar.value * (1 - HYSTERESIS):
            episode.log.info("operator_moved_down", gain=round(gain.value, 4), why=gain.why, next=self.bar_task,
                             next_gain=round(self.bar.value, 4), next_why=self.bar.why)
            return MOVED_DOWN
        return None


@dataclass
class Turn:
    """One operator's next turn: its task file, its state after earlier turns (None: it starts), and
    the pace of this turn (None: no budget). `episode` keeps a single-process campaign's Episode."""

    path: Path
    state: EpisodeState | None = None
    pace: TurnPace | None = None
    episode: Any = None
    order: int = 0

    @property
    def first(self) -> bool:
        return self.state is None and self.episode is None


@dataclass
class TurnQueue:
    """The operators still to run, and the budget they share (module docstring)."""

    planned: list[Path]
    run_dir: Path
    hours: float | None = None
    spent_before_s: float = 0.0
    threshold: float = 0.10
    iterations: int = 30
    waiting: list[Turn] = field(default_factory=list)
    started_at: float = field(default_factory=time.time)
    records: dict[str, tuple[list[Any], EpisodeResult]] = field(default_factory=dict)
    walls: list[float] = field(default_factory=list)
    out_of_budget: bool = False
    moved_down: int = 0
    budget_stopped: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, campaign: Any, paths: list[Path]) -> TurnQueue:
        """The queue of CAMPAIGN (either kind) over PATHS: the operators it has not finished, those
        a budget stopped in an earlier session continued from their state (taken out of
        campaign.operators, where the summary listed them)."""
        settings = campaign.settings
        previous = getattr(campaign, "budget_before", None) or {}
        queue = cls(planned=list(paths), run_dir=campaign.folder.path, hours=settings.run.hours,
                    spent_before_s=float(previous.get("spent_s", 0.0)), threshold=settings.episode.plateau_gain,
                    iterations=settings.episode.iterations)
        stopped = {op.task: op for op in campaign.operators if op.stopped_by in CONTINUED}
        campaign.operators[:] = [op for op in campaign.operators if op.stopped_by not in CONTINUED]
        done = {op.task for op in campaign.operators}
        for order, path in enumerate(paths):
            if path.stem in done:
                continue
            state = queue.load_state(path.stem) if path.stem in stopped else None
            if path.stem in stopped and state is None:  # no state left: it starts again (and is said to)
                log.warning("budget_state_missing", task=path.stem, detail="runs again from its first attempt")
            queue.waiting.append(Turn(path, state, order=order))
            if state is not None:
                queue.records[path.stem] = (state.attempts, state.result)
        for op in campaign.operators:
            queue.records[op.task] = ([], op)
        return queue

    # -- as the Ray campaign's queue of task files (a deque's popleft, extendleft, len, truth) ---

    def __len__(self) -> int:
        return len(self.waiting)

    def __bool__(self) -> bool:
        return bool(self.waiting) and not self.out_of_budget

    def popleft(self) -> Turn | None:
        return self.next()

    def extendleft(self, paths: Iterable[Path]) -> None:
        """Operators to run again from their first attempt (lost with their node), next."""
        order = {p.stem: i for i, p in enumerate(self.planned)}
        for path in reversed(list(paths)):
            self.waiting.insert(0, Turn(path, order=order.get(path.stem, len(order))))

    # -- the budget -------------------------------------------------------------------------

    @property
    def deadline(self) -> float:
        return self.started_at + (self.hours or 0.0) * 3600.0 - self.spent_before_s

    def spent_s(self) -> float:
        return self.spent_before_s + time.time() - self.started_at

    def attempt_s(self) -> float | None:
        """The median wall time of this run's attempts (None before ESTIMATE_AFTER of them)."""
        return statistics.median(self.walls) if len(self.walls) >= ESTIMATE_AFTER else None

    def rates(self) -> RunRates:
        return RunRates.of(self.records.values(), self.threshold)

    # -- turns ------------------------------------------------------------------------------

    def next(self) -> Turn | None:
        """The next turn, or None when there is none (all run, or the budget is spent)."""
        if not self.waiting or self.out_of_budget:
            return None
        if self.hours is None:
            return self.waiting.pop(0)
        if time.time() >= self.deadline:
            self.out_of_budget = True
            return None
        rates = self.rates()
        worth = [(state_gain(t.state, rates, self.threshold), t) for t in self.waiting]
        ranked = sorted(worth, key=lambda w: (-w[0].value, w[1].order))
        (gain, turn), rest = ranked[0], ranked[1:]
        self.waiting.remove(turn)
        bar, bar_task = (rest[0][0], rest[0][1].path.stem) if rest else (None, None)
        turn.pace = TurnPace(self.deadline, bar, bar_task, self.attempt_s(), rates)
        log.info("operator_turn", task=turn.path.stem, gain=round(gain.value, 4), why=gain.why,
                 attempts=len(turn.state.attempts) if turn.state else 0, waiting=len(self.waiting))
        return turn

    def returned(self, turn: Turn, result: EpisodeResult, state: EpisodeState | None) -> bool:
        """A turn ended with RESULT (STATE: the episode's, where it ran). True when the operator goes
        back to the queue (moved down); False when the campaign records RESULT as it is."""
        task = turn.path.stem
        if state is not None:
            self.records[task] = (state.attempts, result)
        if result.stopped_by == MOVED_DOWN and state is not None:
            self.moved_down += 1
            turn.state, turn.pace = state, None
            self.save_state(state)
            self.waiting.append(turn)
            return True
        if result.stopped_by == BUDGET:
            self.out_of_budget = True
            self.budget_stopped.append(task)
            if state is not None:
                self.save_state(state)
            return False
        self.drop_state(task)
        return False

    def left_at_the_end(self, stopped_by: str = BUDGET) -> list[EpisodeResult]:
        """The operators still waiting when the run ended (the budget ran out: BUDGET; a stop:
        SUSPENDED) with their figures so far; those that never started are left out (a resume starts
        them). Their state stays in RUN_DIR/turns/, and a resume continues them."""
        results = []
        for turn in self.waiting:
            if turn.state is not None:
                results.append(turn.state.result.model_copy(update={"stopped_by": stopped_by}))
                if stopped_by == BUDGET:
                    self.budget_stopped.append(turn.path.stem)
        return results

    def attempt_done(self, wall_s: float) -> None:
        self.walls.append(wall_s)

    # -- the state files --------------------------------------------------------------------

    def _state_path(self, task: str) -> Path:
        return self.run_dir / TURNS_FOLDER / f"{task}.json"

    def save_state(self, state: EpisodeState) -> None:
        from launch.atomic_file import write_atomically

        path = self._state_path(state.task)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, state.model_dump_json())

    def load_state(self, task: str) -> EpisodeState | None:
        try:
            return EpisodeState.model_validate_json(self._state_path(task).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def drop_state(self, task: str) -> None:
        self._state_path(task).unlink(missing_ok=True)

    # -- what it says -----------------------------------------------------------------------

    def plan(self, in_flight: int = 1, in_running: int = 0) -> dict[str, Any]:
        """Operators left, attempts planned (the caps' bound, or what the budget's time holds at the
        measured median), and the estimated end. IN_RUNNING operators run now (counted at their cap)."""
        left = list(self.waiting)
        cap = sum(self.iterations - (len(t.state.attempts) if t.state else 0) for t in left)
        cap += in_running * self.iterations
        median = self.attempt_s()
        planned = cap
        end: float | None = None
        if median is not None:
            planned_time = cap * median / max(1, min(in_flight, len(left) + in_running))
            end = time.time() + planned_time
        if self.hours is not None:
            left_s = max(0.0, self.deadline - time.time())
            if median is not None:
                planned = min(cap, int(left_s / median * max(1, in_flight)))
            end = self.deadline if end is None else min(end, self.deadline)
        return {"operators_left": len(left), "attempts_planned": planned, "attempt_s": median, "ends_at": end}

    def line(self, in_running: int = 0, in_flight: int = 1, walls: list[float] | None = None) -> str:
        """`18 operator(s) left, up to 412 attempts at 61 s, ends ~17:40` (the progress line's tail);
        WALLS: the latest attempts' wall times where this process does not see the attempts (Ray)."""
        if walls is not None:
            self.walls = list(walls)
        plan = self.plan(in_flight, in_running)
        left = plan["operators_left"] + in_running
        text = f"{left} operator(s) left, up to {plan['attempts_planned']} attempts"
        if plan["attempt_s"] is None:
            text += ", end estimated after the first attempts"
        else:
            text += f" at {plan['attempt_s']:.0f} s, ends ~{_clock(plan['ends_at'])}"
        if self.hours is not None:
            text += f" (budget {self.hours:g} h, ends by {_clock(self.deadline)})"
        return text

    def record(self, operators: list[EpisodeResult]) -> dict[str, Any] | None:
        """summary.json's `budget`: the budget, what it spent and what it bought (None without one)."""
        if self.hours is None:
            return None
        ended = list(operators)
        return {"hours": self.hours, "spent_s": round(self.spent_s(), 1),
                "deadline": datetime.fromtimestamp(self.deadline).astimezone().isoformat(timespec="seconds"),
                "attempts": sum(op.attempts for op in ended),
                "operators_run": len(ended), "feasible": sum(op.feasible for op in ended),
                "fast_1": sum(bool(op.feasible and op.speedup_vs_eager and op.speedup_vs_eager > 1) for op in ended),
                "stopped_by_budget": sorted(set(self.budget_stopped)), "moved_down": self.moved_down,
                "not_started": [t.path.stem for t in self.waiting if t.state is None]}

    def bought(self, operators: list[EpisodeResult], again: str = "evokernel run --resume RUN_DIR") -> str | None:
        """One line: what the budget bought, and the resume command (AGAIN) where it left operators."""
        record = self.record(operators)
        if record is None:
            return None
        line = (f"the time budget ({record['hours']:g} h, {record['spent_s'] / 3600:.2f} h spent) bought "
                f"{record['attempts']} attempts over {record['operators_run']} operator(s): {record['feasible']} "
                f"feasible, {record['fast_1']} faster than eager")
        if record["stopped_by_budget"] or record["not_started"]:
            line += (f"; {len(record['stopped_by_budget'])} stopped by the budget, {len(record['not_started'])} "
                     f"never started: continue with  {again} (--hours: the run's total, a larger one gives it more)")
        return line


def _clock(epoch: float | None, now: float | None = None) -> str:
    """`17:40` today; `Tue 08 Dec 03:40` on another day (a two-day run's end is not this evening)."""
    if epoch is None:
        return "?"
    when = datetime.fromtimestamp(epoch)
    today = datetime.fromtimestamp(time.time() if now is None else now).date()
    return when.strftime("%H:%M") if when.date() == today else when.strftime("%a %d %b %H:%M")


