"""How a concurrent campaign stops: a Ctrl-C or SIGTERM (the episodes in flight cancelled, what
they did kept as `interrupted`), the cluster's head lost (nothing cancelled, since nothing would
answer: the episodes in flight kept as stopped by infrastructure, and a backstop that writes the
summary and the resume line before Ray's core worker ends the driver), and the run recorder's
answers while stopping (bounded waits).

A mixin of launch.ray_campaign.concurrent_campaign.ConcurrentCampaign, whose run state it
shares (error, operators, lost, folder, ray_processes and the stop flags); kept apart so that
the campaign's module stays the run itself.
"""

from __future__ import annotations

import _thread
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import ray
import structlog

from actors.episode_factory import INFRA
from actors.messages import EpisodeResult
from launch.ray_campaign.lost_operators import LOST
from launch.ray_campaign.ray_session import gcs_reachable
from launch.run_summary import INTERRUPTED

STOP_CALL_TIMEOUT_S = 5.0  # a recorder call while stopping; Ray ends a driver ~60 s after losing its GCS
HEAD_LOST_BACKSTOP_S = 40.0  # after the GCS is lost: end here, summary and resume line, before Ray does
RAY_HEAD_LOST = "the run's Ray head stopped"

log = structlog.get_logger("evokernel.campaign")


class CampaignStops:
    """The stop paths of a ConcurrentCampaign (see the module's docstring)."""

    def _head_gone(self, address: str) -> None:
        """The GCS watch's word (its thread): the cluster's head is gone. The campaign stops as
        it would at a Ctrl-C, but as an error with the resume command: what ran is kept, what was
        in flight is marked as stopped by infrastructure, the memory flushed, the summary written,
        and all of it before Ray's core worker ends this process (about 60 s after the loss)."""
        self.error = self.error or (f"{RAY_HEAD_LOST}: its GCS at {address} refuses connections (the head's "
                                    "gcs_server was killed or its node went away)")
        self._head_lost = True
        self._stop_requested = True
        log.error("ray_head_lost", gcs=address)
        if self._watching:
            _thread.interrupt_main()  # out of a Ray call that would wait for the GCS
        threading.Timer(HEAD_LOST_BACKSTOP_S, self._backstop).start()

    def _backstop(self) -> None:
        """Still not ended HEAD_LOST_BACKSTOP_S after the loss (a call that waited on the GCS): the
        summary and the resume line now, then exit 1, before Ray's own end (a C++ line)."""
        if self._ended:
            return
        log.error("ray_head_lost_backstop", detail=f"the campaign did not end within {HEAD_LOST_BACKSTOP_S:.0f} s")
        self._write(finished=True)
        print(f"evokernel run: stopped: {self.error}\n  continue with  evokernel run --resume {self.folder.path}",
              file=sys.stderr, flush=True)
        if self.ray_processes is not None:
            self.ray_processes.end_survivors(grace_s=1.0)
        os._exit(1)

    def _without_head(self, pending: dict[Any, Path], recorder: Any) -> None:
        """The head is gone: the episodes in flight are not cancelled (nothing would answer), their
        figures so far kept, each marked as stopped by infrastructure (a resume runs it again)."""
        for path in pending.values():
            result = self._partial(recorder, path, stopped_by=INFRA, error=self.error or RAY_HEAD_LOST)
            self.operators.append(result)
        pending.clear()
        self._write()

    def _recorded(self, call: Any, fallback: Any) -> Any:
        """The run recorder's answer to `call`. While stopping, the wait is bounded and `fallback`
        stands in: a stop signal sent to the whole process group also ends the recorder and Ray's
        GCS, and an unbounded wait would last until Ray's core worker ends this process."""
        if not self.interrupted and not self._head_lost:
            return ray.get(call)
        if self._recorder_lost:
            return fallback
        try:
            return ray.get(call, timeout=STOP_CALL_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - gone or silent: the stop goes on without it
            self._recorder_lost = True
            log.warning("run_recorder_lost", error=type(exc).__name__,
                        detail="the summary of the operators in flight lacks their partial figures")
            return fallback

    def _not_run_again(self, recorder: Any, interrupted: bool) -> None:
        """Lost operators still waiting to run again when the campaign stops: what their lost try
        did, as interrupted (a stop) or lost (an error stopped the campaign)."""
        for path in self.lost.release(True):
            error = INTERRUPTED if interrupted else f"{LOST}: {self.lost.tries[path.stem][-1]}"
            result = self._partial(recorder, path, stopped_by=INTERRUPTED if interrupted else INFRA, error=error)
            self.operators.append(result)
            self._recorded(recorder.operator_done.remote(result), None)

    def _cancel(self, pending: dict[Any, Path], recorder: Any, grace_s: float = 15.0) -> None:
        """Cancel the episodes in flight; what they did so far is kept as `interrupted` results."""
        if not gcs_reachable():  # the stop signal reached Ray's processes too: nothing will answer
            grace_s = 0.0
        for ref in pending:
            ray.cancel(ref)
        deadline = time.monotonic() + grace_s
        while pending and time.monotonic() < deadline:
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0.5)
            for ref in ready:
                self._finished(pending.pop(ref), ref, recorder)
        for ref, path in list(pending.items()):  # did not stop in time: kill the worker
            ray.cancel(ref, force=True)
            result = self._partial(recorder, path, stopped_by=INTERRUPTED, error=INTERRUPTED)
            self.operators.append(result)
            self._recorded(recorder.operator_done.remote(result), None)  # the status line's interrupted count
            pending.pop(ref)
        self._write()

    def _partial(self, recorder: Any, path: Path, stopped_by: str, error: str) -> EpisodeResult:
        """An operator stopped midway: what the recorder holds of it (attempts, tokens so far),
        marked with how it stopped."""
        held = self._recorded(recorder.partial_result.remote(path.stem), EpisodeResult(task=path.stem))
        return held.model_copy(update={"stopped_by": stopped_by, "error": error})
