"""Waits that a stop signal must not cut short: the run's final flush (issue 55).

A stop (Ctrl-C, or SIGTERM, which `evokernel run` turns into the same KeyboardInterrupt) that
arrives while the campaign is already stopping, flushing the memory's last value updates and
writing the final summary, used to escape through that flush: exit 130 with a bare
"interrupted", no resume command and no `finished_at`. The flush is bounded already; a stop
during it is recorded (the run counts as interrupted) and the flush is finished first, within
its own bound, so the summary is written and the usual resume line printed.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import structlog

log = structlog.get_logger("launch.stop_shield")
T = TypeVar("T")


def wait_through_a_stop(wait: Callable[[float], T], timeout_s: float, what: str) -> tuple[T, bool]:
    """`wait(remaining_s)` until it returns, within `timeout_s` in all, whatever stop signals come
    meanwhile; (its answer, whether a stop came). What `wait` raises (its own timeout at the
    end of the bound) goes to the caller."""
    deadline = time.monotonic() + timeout_s
    stopped = False
    while True:
        try:
            return wait(max(0.0, deadline - time.monotonic())), stopped
        except KeyboardInterrupt:
            if not stopped:
                log.warning("stop_during_final_flush", waiting_for=what,
                            detail=f"finishing it first (at most {timeout_s:.0f} s), then stopping")
            stopped = True


class LateStops:
    """Ctrl-C and SIGTERM once the campaign has ended (its teardown, the local model's stop, the
    table and the closing lines): noted, not raised, so they cannot cut the end short, and the
    exit status is decided already. `restore` puts back the handlers there were at the start."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        main = threading.current_thread() is threading.main_thread()
        self.original = {sig: signal.getsignal(sig) for sig in self.SIGNALS} if main else {}

    def ignore(self) -> None:
        for sig in self.original:
            signal.signal(sig, _note_a_late_stop)

    def restore(self) -> None:
        for sig, handler in self.original.items():
            signal.signal(sig, handler)


def _note_a_late_stop(signum: int, frame: Any) -> None:
    structlog.get_logger("evokernel.run").warning("stop_after_the_end", signal=signum, detail="the run has ended: reporting it first")
