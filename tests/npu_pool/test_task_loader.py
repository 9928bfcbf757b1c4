"""Task files are loaded in a child with time and memory bounds (issue 45.7): a loop at import
is a timeout, a huge allocation a memory message, each one line; the child is replaced after."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from npu_pool.config import HarnessConfig
from npu_pool.tasks import TaskLoadError, load_task, load_task_for

from .harness_support import FIXTURES, SMALL_BYTES, SUITE

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
        load_task_for(HOSTILE / "loops_at_import.py", _config())
    assert time.monotonic() - started < 30  # the 5 s bound, not forever
    message = str(raised.value)
    assert message.startswith("loops_at_import.py: loading the task did not finish within 5 s") and "\n" not in message
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
