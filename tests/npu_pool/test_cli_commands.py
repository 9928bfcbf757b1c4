"""`evokernel verify`, `profile` and `tasks check`: exit codes and the final JSON line."""

from __future__ import annotations

import json
import shutil

import pytest

from launch.cli import main

from .harness_support import FIXTURES, SUITE

RELU_TASK = str(FIXTURES / "tasks" / "huge_relu.py")


@pytest.fixture(autouse=True)
def _small_fast_settings(monkeypatch):
    from npu_pool.paths import cache_root

    monkeypatch.setenv("EVOKERNEL_HARNESS__FIT_MAX_BYTES", str(4 * 2**20))
    monkeypatch.setenv("EVOKERNEL_HARNESS__TIMED_TRIALS", "5")
    monkeypatch.setenv("EVOKERNEL_HARNESS__COMPILE_BASELINE", "false")
    monkeypatch.setenv("EVOKERNEL_HARNESS__BUILD_CACHE_DIR", str(cache_root() / "test-build"))


def _last_json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_verify_feasible_exits_0_with_json(capsys):
    code = main(["verify", RELU_TASK, str(FIXTURES / "candidates" / "relu.cpp"), "--json"])
    line = _last_json(capsys)
    assert code == 0
    assert line["feasible"] is True and line["gate"] == "ok" and line["reason"]
    assert line["format"] == "kernel" and line["sizes"]["dim"] < 393216


def test_verify_infeasible_exits_1(capsys):
    code = main(["verify", RELU_TASK, str(FIXTURES / "candidates" / "relu_plus_one.cpp"), "--json", "--format", "kernel"])
    line = _last_json(capsys)
    assert code == 1
    assert (line["feasible"], line["gate"]) == (False, "correctness")


def test_verify_usage_errors_exit_2(capsys, tmp_path):
    assert main(["verify", RELU_TASK, str(tmp_path / "missing.cpp")]) == 2
    broken_task = tmp_path / "broken.py"
    broken_task.write_text("import torch\nclass Model(torch.nn.Module):\n    pass\n")
    assert main(["verify", str(broken_task), str(FIXTURES / "candidates" / "relu.cpp")]) == 2
    assert "get_inputs" in capsys.readouterr().err


def test_profile_prints_statistics_and_json(capsys):
    code = main(["profile", RELU_TASK, str(FIXTURES / "candidates" / "relu.cpp"), "--json"])
    out = capsys.readouterr().out
    line = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and "median" in out
    assert line["feasible"] and line["profile"]["trials"] == 5
    assert line["profile"]["speedup_vs_eager"] > 0


def test_tasks_check_runs_every_task(capsys, tmp_path):
    for name in ("huge_relu", "huge_linear", "huge_softmax_axis"):
        shutil.copy(FIXTURES / "tasks" / f"{name}.py", tmp_path)
    shutil.copy(SUITE / "level1" / "14_SumOverDim.py", tmp_path)
    code = main(["tasks", "check", str(tmp_path), "--json"])
    line = _last_json(capsys)
    assert code == 0 and line["ok"] == line["total"] == 4
    rows = {row["task"]: row for row in line["tasks"]}
    assert rows["huge_relu"]["original_sizes"] == {"batch_size": 4096, "dim": 393216}
    assert "dim" not in rows["14_SumOverDim"]["sizes"]


def test_tasks_check_fits_expression_sizes_and_reports_tensor_mib(capsys, tmp_path):
    (tmp_path / "1_ScaleRows.py").write_text(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x * 3.0\n"
        "batch = 16384 * 4\nrow_shape = (batch // 16,)\n"
        "def get_inputs():\n    return [torch.rand(batch, *row_shape)]\ndef get_init_inputs():\n    return []\n")
    code = main(["tasks", "check", str(tmp_path), "--json"])
    (row,) = _last_json(capsys)["tasks"]
    assert code == 0 and row["ok"]
    assert row["original_sizes"] == {"batch": 65536}  # row_shape[0] is derived: it follows batch
    assert 0 < row["tensor_mib"] <= 4  # the fitted inputs and output, under the 4 MiB test budget
    batch = row["sizes"]["batch"]
    assert row["tensor_mib"] == 2 * batch * (batch // 16) * 4 / 2**20


def test_tasks_check_reports_a_broken_task(capsys, tmp_path):
    (tmp_path / "1_Broken.py").write_text(
        "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x.undefined()\n"
        "def get_inputs():\n    return [torch.rand(4)]\ndef get_init_inputs():\n    return []\n")
    code = main(["tasks", "check", str(tmp_path), "--json"])
    line = _last_json(capsys)
    assert code == 1 and line == {**line, "ok": 0, "total": 1, "failed": ["1_Broken"]}


def test_tasks_check_never_runs_a_task_file_unconfined(capsys, tmp_path):
    """Issue 55: `tasks check` ran each task's reference in its own process, so the file's
    module-level code ran unconfined (a file write landed). Its loading and its reference now
    run in the task loader's child only, where it may write nothing."""
    suite, elsewhere = tmp_path / "suite", tmp_path / "elsewhere"
    suite.mkdir()
    elsewhere.mkdir()
    marker = elsewhere / "written_by_a_task.txt"
    (suite / "1_Writes.py").write_text(
        f"import torch\ntry:\n    open({str(marker)!r}, 'a').write('x')\nexcept OSError:\n    pass\n"
        "class Model(torch.nn.Module):\n    def forward(self, x):\n        return x * 3.0\n"
        "def get_inputs():\n    return [torch.rand(64)]\ndef get_init_inputs():\n    return []\n")
    code = main(["tasks", "check", str(suite), "--json"])
    (row,) = _last_json(capsys)["tasks"]
    assert code == 0 and row["ok"] and row["reference_ms"] >= 0
    assert not marker.exists(), "a task file's module-level code wrote outside the loader's confinement"
