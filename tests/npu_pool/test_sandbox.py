"""The sandbox: crashes, hangs and memory bombs come back as verdicts, in bounded time."""

from __future__ import annotations

import time

import pytest

from npu_pool.sandbox import network_namespace_available, scrubbed_env
from npu_pool.verifier import evaluate, verify

from .harness_support import fixture_candidate, fixture_task, harness_config


@pytest.fixture(scope="module")
def relu_task():
    return fixture_task("huge_relu")


def test_segfault_is_a_runtime_verdict(relu_task):
    verdict = verify(relu_task, fixture_candidate("segfault.cpp"), harness_config())
    assert (verdict.feasible, verdict.gate, verdict.category) == (False, "runtime", "crash")
    assert "SIGSEGV" in verdict.reason and "correctness" in verdict.reason


def test_hang_is_killed_at_the_run_limit(relu_task):
    started = time.monotonic()
    verdict = verify(relu_task, fixture_candidate("hang.cpp"), harness_config(run_timeout_s=3.0))
    assert (verdict.gate, verdict.category) == ("runtime", "timeout")
    assert "trial 1" in verdict.reason
    assert time.monotonic() - started < 30  # process start + compile + 3 s, never the full default limits


def test_memory_bomb_hits_the_address_space_cap(relu_task):
    verdict = verify(relu_task, fixture_candidate("memory_bomb.cpp"), harness_config(memory_limit_mb=2048))
    assert (verdict.feasible, verdict.gate) == (False, "runtime")
    assert verdict.category in ("abort", "out_of_memory", "killed")
    assert verdict.sandbox["memory_limit_mb"] == 2048


def test_sandbox_records_its_limits_and_isolation(relu_task):
    verdict = verify(relu_task, fixture_candidate("relu.cpp"), harness_config())
    assert verdict.feasible, verdict.details
    assert verdict.sandbox["env"] == "allowlist"
    assert verdict.sandbox["network_namespace"] is network_namespace_available()
    if network_namespace_available():
        assert verdict.sandbox["network_isolated"] is True


def test_environment_is_scrubbed(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-never-leak")
    monkeypatch.setenv("EVOKERNEL_LLM__API_KEY", "secret")
    monkeypatch.setenv("HF_TOKEN", "token")
    monkeypatch.setenv("SOME_UNRELATED_SETTING", "x")
    env = scrubbed_env((), tmp_path, tmp_path)
    assert not any(name in env for name in ("OPENAI_API_KEY", "EVOKERNEL_LLM__API_KEY", "HF_TOKEN", "SOME_UNRELATED_SETTING"))
    assert env["TMPDIR"] == str(tmp_path / "tmp") and "PATH" in env


def test_crash_while_profiling_makes_the_candidate_infeasible(relu_task):
    verdict, report = evaluate(relu_task, fixture_candidate("crash_when_profiled.cpp"), harness_config())
    assert report is None
    assert (verdict.feasible, verdict.gate, verdict.category) == (False, "runtime", "crash")
    assert "profile" in verdict.reason
