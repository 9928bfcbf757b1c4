"""`evokernel run` with no endpoint serves the local model itself, uses its settings, stops it."""

from __future__ import annotations

import json

import pytest

from launch.cli import main
from launch.local_llm.models import QWEN25_CODER_15B
from tests.launch.local_llm_standin import (
    install_standin,
    port_is_closed,
    recorded_requests,
    reset_structlog,
)

RELU_KERNEL = """```cpp
#include <cstdint>
extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1) {
    const int64_t n = x_d0 * x_d1;
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] > 0.f ? x[i] : 0.f;
}
```"""

FAST_HARNESS = ["--set", "harness.compile_baseline=false", "--set", "harness.timed_trials=5",
                "--set", "harness.warmup_trials=1", "--set", "harness.correctness_trials=2",
                "--set", "harness.profile_input_sets=1"]


fresh_logging = pytest.fixture(autouse=True)(reset_structlog)


def test_run_without_endpoint_starts_the_local_server_and_stops_it(tmp_path, monkeypatch, capsys):
    folder = install_standin(tmp_path, monkeypatch)
    monkeypatch.setenv("STANDIN_REPLY", RELU_KERNEL)
    monkeypatch.delenv("EVOKERNEL_LLM__BASE_URL", raising=False)
    code = main([*FAST_HARNESS, "run", "--no-ray", "--tasks", "4_ReLU*", "--iterations", "1", "--backend", "cpu",
                 "--memory", str(tmp_path / "bank"), "--out", str(tmp_path / "run")])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["operators"][0]["feasible"]
    requests = recorded_requests(folder)
    assert requests, "the run never asked the local server"
    # The model's own settings reached the agent (the user kept LLMConfig's defaults).
    first = requests[0]
    assert first["model"] == QWEN25_CODER_15B.name
    assert first["max_tokens"] == QWEN25_CODER_15B.max_tokens
    assert first["temperature"] == QWEN25_CODER_15B.temperature
    assert "kernel" in json.dumps(first["messages"])
    argv = json.loads((folder / "argv.json").read_text())
    assert port_is_closed(f"http://127.0.0.1:{argv['port']}/v1")


def test_a_model_server_killed_mid_run_is_started_again_and_the_operator_goes_on(tmp_path, monkeypatch, capsys):
    """The first draft's request kills the server (as the kernel's OOM killer would): the run starts it
    again on its port, the request's retry reaches it, and the operator ends feasible, not as an
    infrastructure fault after llm.endpoint_wait_s."""
    folder = install_standin(tmp_path, monkeypatch)
    monkeypatch.setenv("STANDIN_REPLY", RELU_KERNEL)
    monkeypatch.setenv("STANDIN_MODE", "dies_once")
    monkeypatch.delenv("EVOKERNEL_LLM__BASE_URL", raising=False)
    code = main([*FAST_HARNESS, "run", "--no-ray", "--tasks", "4_ReLU*", "--iterations", "1", "--backend", "cpu",
                 "--memory", str(tmp_path / "bank"), "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 0, err
    [operator] = json.loads((tmp_path / "run" / "summary.json").read_text())["operators"]
    assert operator["feasible"] and operator["stopped_by"] == "iterations"
    assert (folder / "requests.jsonl.died").exists() and len(recorded_requests(folder)) == 1
    assert "llm.server.died" in err and "SIGKILL" in err and "llm.server.restarting" in err
