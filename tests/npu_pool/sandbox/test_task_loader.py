"""Task files are loaded in a child with time and memory bounds (issue 45.7): a loop at import
is a timeout, a huge allocation a memory message, each one line; the child is replaced after."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from npu_pool.config import HarnessConfig
from npu_pool.sandbox.task_loader import load_task_for
from npu_pool.tasks.spec import TaskLoadError, load_task

from ..harness_support import FIXTURES, SMALL_BYTES, SUITE
from .test_host_memory import small_host  # noqa: F401 - a fixture: the test's "machine"

HOSTILE = FIXTURES / "hostile_tasks"
RELU = SUITE / "level1" / "4_ReLU.py"


def _config(**overrides) -> HarnessConfig:
    return HarnessConfig(**({"fit_max_bytes": SMALL_BYTES, "task_load_timeout_s": 5.0, "task_load_memory_mb": 1024}
                            | overrides))


def test_a_task_loads_in_the_child_as_it_does_in_process():
    assert load_task_for(RELU, _config()) == load_task(RELU, max_bytes=SMALL_BYTES)


def test_a_task_that_loops_at_import_fails_with_a_timeout_within_its_bound():
    started = time.monotonic()
    with pytest.raises(TaskLoadError) as raised:
        load_task_for(HOSTILE / "loops_at_import.py", _config(task_load_timeout_s=2.0))
    assert time.monotonic() - started < 30  # the 2 s bound, not forever
    message = str(raised.value)
    assert message.startswith("loops_at_import.py: loading the task did not finish within 2 s") and "\n" not in message
    assert load_task_for(RELU, _config()).task_id == "4_ReLU"  # a new child serves the next task


def test_a_task_that_allocates_huge_memory_at_import_fails_with_a_memory_message():
    with pytest.raises(TaskLoadError) as raised:
        load_task_for(HOSTILE / "allocates_at_import.py", _config())
    message = str(raised.value)
    assert "ran out of memory" in message and "1024 MiB" in message and "WorkerCrashed" not in message, message
    assert load_task_for(RELU, _config()).task_id == "4_ReLU"


def test_a_missing_task_file_is_one_line(tmp_path: Path):
    with pytest.raises(TaskLoadError, match="no such file"):
        load_task_for(tmp_path / "absent.py", _config())


PARENT = r"""
import sys
from npu_pool.config import HarnessConfig
from npu_pool.sandbox.task_loader import load_task_for
load_task_for(sys.argv[1], HarnessConfig(task_load_timeout_s=600.0))
"""


def _loader_children(parent: int) -> list[int]:
    try:
        children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    except OSError:
        return []
    return [int(c) for c in children if b"npu_pool.sandbox.task_loader" in Path(f"/proc/{c}/cmdline").read_bytes()]


def test_a_loader_stuck_in_a_task_does_not_outlive_its_parent():
    import os
    import signal
    import subprocess
    import sys

    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(HOSTILE / "loops_at_import.py")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 300  # liveness only: torch imports slowly on a loaded machine
        while not (loaders := _loader_children(parent.pid)):
            assert time.monotonic() < deadline and parent.poll() is None
            time.sleep(0.2)
        time.sleep(3)  # the loader is inside the task's loop now
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() for pid in loaders) and time.monotonic() < deadline:
        time.sleep(0.2)
    alive = [pid for pid in loaders if Path(f"/proc/{pid}").exists()]
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert alive == []


TASK_TAIL = """

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(8, 8)]


def get_init_inputs():
    return []
"""


def test_a_task_has_no_network_while_it_loads(tmp_path: Path):
    """Issue 55: the loader child had the machine's network. A UDP listener here (Landlock's
    TCP rules, where the kernel has them, do not cover UDP); the task's module-level code sends
    it a datagram; nothing may arrive."""
    import socket

    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.settimeout(2.0)
    port = listener.getsockname()[1]
    task = tmp_path / "phones_home.py"
    task.write_text("import socket\nimport torch\ntry:\n    socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
                    f".sendto(b'x', ('127.0.0.1', {port}))\nexcept OSError:\n    pass\n" + TASK_TAIL)
    try:
        load_task_for(task, _config())
        with pytest.raises(TimeoutError):
            listener.recvfrom(16)
    finally:
        listener.close()


def test_a_task_that_forks_at_import_fails_in_one_line_and_leaves_nothing(tmp_path: Path):
    """Issue 55: the loader had no process-tree bound. The task forks at most 200 sleeping
    children (its own cap: never an unbounded fork bomb on a shared machine) against a
    process_limit of 64 tasks."""
    import os

    marker = f"evkfork{os.getpid()}"
    task = tmp_path / "forks_at_import.py"
    task.write_text("import os, time\nimport torch\nfor _ in range(200):\n    if os.fork() == 0:\n"
                    f"        os.execvp('sleep', ['sleep', '60'])  # {marker}\n" + TASK_TAIL)
    config = _config(process_limit=64, task_load_timeout_s=60.0)
    with pytest.raises(TaskLoadError) as raised:
        load_task_for(task, config)
    message = str(raised.value)
    assert "more processes than allowed" in message and "64 tasks" in message and "\n" not in message, message
    deadline = time.monotonic() + 30
    while _sleepers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _sleepers() == [], "the task's children outlived its loading"
    assert load_task_for(RELU, config).task_id == "4_ReLU"  # a new child serves the next task


def _sleepers() -> list[int]:
    """`sleep 60` processes whose parent is a task loader (what the forking task started)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == b"sleep\x0060\x00":
                parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
                if b"npu_pool.sandbox.task_loader" in Path(f"/proc/{parent}/cmdline").read_bytes():
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_the_loader_child_imports_this_very_harness():
    """The child runs from "/" as `python -m npu_pool.sandbox.task_loader`: its PYTHONPATH starts
    with the folder of the npu_pool the parent runs, so it loads tasks with this harness, not with
    a copy an editable install elsewhere points at (test_runner has the worker's twin of this)."""
    import os

    import npu_pool
    from npu_pool.sandbox import task_loader

    load_task_for(RELU, _config())
    loader = next(iter(task_loader._loaders.values()))
    environ = Path(f"/proc/{loader.proc.pid}/environ").read_bytes().split(b"\0")
    path = next(v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"PYTHONPATH="))
    first = Path(path.split(os.pathsep)[0])
    assert (first / "npu_pool" / "__init__.py").resolve() == Path(npu_pool.__file__).resolve()



@pytest.mark.parametrize("small_host", [64], indirect=True)
@pytest.mark.usefixtures("small_host")
def test_a_loader_the_machine_cannot_hold_says_so_at_once():
    """A loader child killed before it is ready (here: started inside a 64 MiB "machine", a real
    cgroup, where importing torch cannot fit) is told as a memory kill at once, not as a start
    that did not come within the 300 s startup bound."""
    started = time.monotonic()
    with pytest.raises(TaskLoadError) as raised:
        load_task_for(RELU, _config(task_load_memory_mb=1025))  # a loader of its own, not a warm one
    assert time.monotonic() - started < 60
    assert str(raised.value).startswith("4_ReLU.py: the task loader was killed for memory before it was ready"), \
        str(raised.value)
