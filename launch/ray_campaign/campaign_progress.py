"""What a running Ray campaign shows its user and hears from them: the status line, one line for
each LLM worker that retried an endpoint fault (the retries happen in the workers' processes,
whose logs the driver does not print), and Ctrl-C turned into the campaign's stop flag."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

import ray
import structlog

from launch.metrics import CampaignCounters

log = structlog.get_logger("evokernel.campaign")


class ProgressDisplay:
    """A refreshing status line on a terminal; a log line every `interval_s` otherwise."""

    def __init__(self, stream: TextIO | None = None, interval_s: float = 10.0, tty: bool | None = None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval_s = interval_s
        self._last = 0.0
        self._shown = False
        # the line's tail: operators left, attempts planned, the end estimate (launch/budget.py)
        self.suffix: Callable[[CampaignCounters], str] | None = None

    def line(self, counters: CampaignCounters) -> str:
        return counters.line() + (f" | {self.suffix(counters)}" if self.suffix is not None else "")

    def show(self, counters: CampaignCounters, force: bool = False) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K" + self.line(counters))
            self.stream.flush()
            self._shown = True
        elif force or time.monotonic() - self._last >= self.interval_s:
            self._last = time.monotonic()
            log.info("progress", status=self.line(counters))

    def clear(self) -> None:
        if self.tty and self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def note(self, line: str, fault: bool = True) -> None:
        """One line above the status line (a retry, a wait: a fault, logged as a warning; the plan
        and what the budget bought: not one): on the terminal and in the log."""
        (log.warning if fault else log.info)("campaign_note", note=line)
        self.clear()
        self.stream.write(f"evokernel run: {line}\n")
        self.stream.flush()
        self._shown = False  # the next show() draws the status line again, below


class LLMRetryNotes:
    """Polls the LLM workers' usage and notes the endpoint-fault retries each made since the last look."""

    def __init__(self, progress: ProgressDisplay):
        self.progress = progress
        self._retries_seen: dict[int, int] = {}  # LLM worker -> endpoint-fault retries shown so far

    def poll(self, workers: list[Any]) -> bool:
        """Note the new retries; whether every worker answered (within 2 s)."""
        try:
            usages = ray.get([worker.usage.remote() for worker in workers], timeout=2.0)
        except Exception:  # noqa: BLE001 - a display only: a worker busy or gone shows nothing
            return False
        for index, usage in enumerate(usages):
            new = usage.retries - self._retries_seen.get(index, 0)
            if new > 0:
                more = f" ({new} retries since the last line)" if new > 1 else ""
                self.progress.note(f"LLM endpoint fault: {usage.last_retry}{more}")
            self._retries_seen[index] = usage.retries
        return True


class CtrlCRequestsStop:
    """Around the episode loop: Ctrl-C (and SIGTERM, which `evokernel run` hands to the Ctrl-C
    handler) also sets the campaign's stop flag, checked at least once a second, so the run stops
    cleanly even when the KeyboardInterrupt lands in a Ray call that turns it into a status."""

    def __init__(self, campaign: Any):  # launch.ray_campaign.concurrent_campaign.ConcurrentCampaign
        self.campaign = campaign
        self.previous: Any = None

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGINT)
        if not callable(previous):  # ignored (a background job), or not Python's: leave it
            return

        def on_ctrl_c(signum: int, frame: Any) -> None:
            self.campaign.request_stop()
            previous(signum, frame)

        self.previous = previous
        signal.signal(signal.SIGINT, on_ctrl_c)

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
