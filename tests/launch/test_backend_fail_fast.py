"""`evokernel run` and `doctor` refuse at once where the configured backend cannot run here
(issue 15, point 3): before any model is served or called, with what is missing."""

from __future__ import annotations

import time

import pytest
import torch

from launch.cli import main

needs_no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is present")


@needs_no_gpu
def test_run_with_an_unusable_backend_exits_2_before_any_model_call(tmp_path, capsys):
    started = time.perf_counter()
    code = main(["run", "--no-ray", "--backend", "cuda", "--out", str(tmp_path / "run"), "--iterations", "1"])
    assert code == 2 and time.perf_counter() - started < 10
    assert "the cuda backend cannot run here" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # no run folder: nothing started


@needs_no_gpu
def test_run_on_a_cluster_leaves_the_check_to_the_workers(monkeypatch):
    """The head of a Ray cluster may have no device: the check is for local runs only."""
    import argparse

    from launch.commands.run import _check_backend
    from launch.config import Settings

    monkeypatch.setenv("EVOKERNEL_HARNESS__BACKEND", "cuda")
    monkeypatch.setenv("EVOKERNEL_RAY__ADDRESS", "auto")
    _check_backend(argparse.Namespace(no_ray=False), Settings())  # no error
    from launch.cli import UsageError

    with pytest.raises(UsageError, match="cannot run here"):
        _check_backend(argparse.Namespace(no_ray=True), Settings())


@needs_no_gpu
def test_doctor_fails_for_an_unusable_configured_backend(capsys, monkeypatch):
    monkeypatch.setenv("EVOKERNEL_HARNESS__BACKEND", "cuda")
    main(["doctor"])
    out = capsys.readouterr().out
    assert "FAIL  backend" in out and "the cuda backend cannot run here" in out
    assert "cuda: unavailable (" in out  # the backends line names why, too
