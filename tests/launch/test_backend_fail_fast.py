"""`evokernel run` and `doctor` refuse at once where the configured backend cannot run here
(issue 15, point 3): before any model is served or called, with what is missing."""

from __future__ import annotations

import pytest
import torch

import launch.commands.run
import launch.local_llm.server
import launch.ray_campaign.concurrent_campaign
from launch.cli import main
from npu_pool import verifier
from npu_pool.sandbox import runner as sandbox

needs_no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is present")


@pytest.fixture
def nothing_starts(monkeypatch):
    """Fails the test if the run gets as far as serving a model, starting Ray, a campaign or a
    sandboxed worker: what "at once" means here, however busy the machine is."""
    def refused(what: str):
        def start(*args, **kwargs):
            raise AssertionError(f"{what} was started for a backend that cannot run here")
        return start

    monkeypatch.setattr(launch.local_llm.server, "local_llm_server", refused("the local model server"))
    monkeypatch.setattr(launch.commands.run, "Campaign", refused("a campaign"))
    monkeypatch.setattr(launch.ray_campaign.concurrent_campaign, "ConcurrentCampaign", refused("a Ray campaign"))
    monkeypatch.setattr(launch.ray_campaign.concurrent_campaign.ray, "init", refused("Ray"))
    monkeypatch.setattr(verifier, "run_worker", refused("a sandboxed worker"))
    monkeypatch.setattr(sandbox.WarmServer, "start", refused("a sandbox server"))


@needs_no_gpu
@pytest.mark.parametrize("ray", [["--no-ray"], []], ids=["no-ray", "ray"])
def test_run_with_an_unusable_backend_exits_2_before_any_model_call(ray, tmp_path, capsys, nothing_starts):
    code = main(["run", *ray, "--backend", "cuda", "--out", str(tmp_path / "run"), "--iterations", "1"])
    assert code == 2
    assert "the cuda backend cannot run here" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # no run folder: nothing started


@needs_no_gpu
def test_run_on_a_cluster_leaves_the_check_to_the_workers(monkeypatch):
    """The head of a Ray cluster may have no device: the check is for local runs only."""
    import argparse

    from launch.commands.run_prepare import check_backend
    from launch.config import Settings

    monkeypatch.setenv("EVOKERNEL_HARNESS__BACKEND", "cuda")
    monkeypatch.setenv("EVOKERNEL_RAY__ADDRESS", "auto")
    check_backend(argparse.Namespace(no_ray=False), Settings())  # no error
    from launch.cli import UsageError

    with pytest.raises(UsageError, match="cannot run here"):
        check_backend(argparse.Namespace(no_ray=True), Settings())


@needs_no_gpu
def test_doctor_fails_for_an_unusable_configured_backend(capsys, monkeypatch):
    monkeypatch.setenv("EVOKERNEL_HARNESS__BACKEND", "cuda")
    main(["doctor"])
    out = capsys.readouterr().out
    assert "FAIL  backend" in out and "the cuda backend cannot run here" in out
    assert "cuda: unavailable (" in out  # the backends line names why, too
