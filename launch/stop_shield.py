"""Waits that a stop signal must not cut short: the run's final flush (issue 55).

A stop (Ctrl-C, or SIGTERM, which `evokernel run` turns into the same KeyboardInterrupt) that
arrives while the campaign is already stopping, flushing the memory's last value updates and
writing the final summary, used to escape through that flush: exit 130 with a bare
"interrupted", no resume command and no `finished_at`. The flush is bounded already; a stop
during it is recorded (the run counts as interrupted) and the flush is finished first, within
its own bound, so the summary is written and the usual resume line printed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

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
