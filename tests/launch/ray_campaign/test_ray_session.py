"""The driver's watch on its cluster's GCS, and the Ray processes it ends (issue 63, point 3)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from launch.ray_campaign.ray_session import GcsWatch, RayProcesses


def test_a_gcs_that_stops_accepting_connections_is_reported_lost_once():
    listener = socket.create_server(("127.0.0.1", 0))
    address = f"127.0.0.1:{listener.getsockname()[1]}"
    lost: list[tuple[str, float]] = []
    done = threading.Event()

    def on_lost(where: str) -> None:
        lost.append((where, time.monotonic()))
        done.set()

    watch = GcsWatch(on_lost, poll_s=0.2, lost_after_s=1.0, address=address).start()
    try:
        time.sleep(1.5)
        assert lost == []  # answering: not lost, however long
        closed = time.monotonic()
        listener.close()
        assert done.wait(10)
        [(where, when)] = lost
        assert where == address and 1.0 <= when - closed < 5.0
        time.sleep(0.6)
        assert len(lost) == 1 and watch.lost_at is not None
    finally:
        watch.stop()
        listener.close()


def test_only_the_noted_processes_are_ended_and_a_reused_pid_is_left_alone():
    """RayProcesses ends what it noted (here a process that looks like a Ray worker), by pid and
    start time."""
    worker = subprocess.Popen(["bash", "-c", "exec -a ray::IDLE sleep 120"])  # as Ray's titled workers read
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        time.sleep(1.0)
        processes = RayProcesses()
        from launch.ray_campaign import ray_session

        found = ray_session._ray_process(worker.pid)
        assert found is not None and found[1].startswith("ray::IDLE")
        assert ray_session._ray_process(other.pid) is None  # not Ray's: never noted
        processes.seen[worker.pid] = found
        processes.seen[other.pid] = ("1", "ray::reused pid")  # noted once, its start time no longer matches
        assert processes.survivors() == [worker.pid]
        assert processes.end_survivors(grace_s=2.0) == [found[1][:80]]
        assert worker.wait(10) is not None and other.poll() is None
    finally:
        for process in (worker, other):
            process.kill()
            process.wait()


def test_a_stop_after_ray_shutdown_still_reaches_the_runs_handler(tmp_path):
    """ray.shutdown puts the C-level SIGTERM disposition back to the default under Python's handler:
    a SIGTERM in a run's last second killed it (exit -15). reassert_stop_handlers installs it again.
    In a child process: the signal must not reach pytest."""
    import textwrap

    script = textwrap.dedent("""
        import os, signal, sys, time
        import ray
        from launch.ray_campaign.ray_session import reassert_stop_handlers
        got = []
        ray.init(address="local", include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
        ray.shutdown()
        if sys.argv[1] == "reassert":
            reassert_stop_handlers()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.5)
        print("handled", got)
    """)
    runs = {how: subprocess.run([sys.executable, "-c", script, how], capture_output=True, text=True, timeout=300,
                                cwd=Path(__file__).resolve().parents[3], env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
            for how in ("reassert", "plain")}
    assert runs["reassert"].returncode == 0 and "handled [15]" in runs["reassert"].stdout, runs["reassert"].stderr[-2000:]
    # the reason for it: without, the process dies of the signal (if Ray ever stops doing this,
    # the helper is harmless and this line says so)
    assert runs["plain"].returncode == -15
