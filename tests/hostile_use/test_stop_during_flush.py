"""SIGTERM while the run's final flush runs (issue 55): the flush is finished, the summary is
written with `finished_at` and marked interrupted, and the run ends as any stop does (the
resume line), instead of escaping with a bare "interrupted".

A real local Ray cluster; the memory actor is a Ray actor whose `close` takes 3 s (the flush
of a large bank on a slow disk), and a real SIGTERM reaches this process 0.5 s into it through
`evokernel run`'s own handler.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from contextlib import ExitStack

import pytest
import ray

from launch.commands.run import _stop_cleanly_on_sigterm
from launch.ray_campaign.concurrent_campaign import ConcurrentCampaign
from tests.launch.ray_campaign.test_concurrent_campaign import settings_for

pytestmark = pytest.mark.slow


@ray.remote(num_cpus=0)
class _SlowFlushMemory:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        time.sleep(3.0)
        self.closed = True

    def was_closed(self) -> bool:
        return self.closed


@pytest.fixture
def local_ray():
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False,
             namespace="evokernel-stop-during-flush")
    yield
    ray.shutdown()


@pytest.fixture
def sigterm_as_evokernel_run():
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
    with ExitStack() as stack:
        _stop_cleanly_on_sigterm(stack)
        yield
    signal.signal(signal.SIGINT, previous_int)


def test_sigterm_during_the_final_flush_finishes_it_and_writes_the_summary(local_ray, tmp_path,
                                                                           sigterm_as_evokernel_run):
    run_dir = tmp_path / "run"
    campaign = ConcurrentCampaign(settings_for("http://127.0.0.1:9", "m", tmp_path), run_dir)
    campaign.actors.memory = _SlowFlushMemory.remote()
    ray.get(campaign.actors.memory.was_closed.remote())  # started before the clock
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
    campaign._finish(None, started_ray=False)  # a stop here used to escape as KeyboardInterrupt
    assert ray.get(campaign.actors.memory.was_closed.remote()), "the flush was cut short"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["finished_at"], summary
