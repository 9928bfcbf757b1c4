"""harness.npu_twin.auto_sync (issue 66.1): the --cce-auto-sync the twin's check assumes is the
user's setting, from YAML and --set like every other, and it reaches the sandboxed check: a
kernel whose scalar accesses rely on the compiler's flags passes with it and is refused, with the
setting named in the feedback, without it."""

from __future__ import annotations

import json

from launch.cli import main
from launch.config import load_settings
from npu_pool.verdict import Candidate
from npu_pool.verifier import verify
from tests.npu_pool.backends.ascendc_twin.twin_support import KERNELS, marked_line
from tests.npu_pool.harness_support import SMALL_BYTES, harness_config

KERNEL = KERNELS / "settings" / "relu_scalar_touch.cpp"


def test_the_setting_comes_from_yaml_and_set(tmp_path, capsys):
    assert load_settings().harness.npu_twin.auto_sync is True  # CANN's default build
    config = tmp_path / "evokernel.yaml"
    config.write_text("harness:\n  npu_twin:\n    auto_sync: false\n")
    assert load_settings(config).harness.npu_twin.auto_sync is False
    assert main(["--config", str(config), "--set", "harness.npu_twin.auto_sync=true", "config", "show", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["harness"]["npu_twin"] == {"auto_sync": True}


def test_the_setting_decides_in_the_sandbox(relu_task):
    candidate = Candidate(source=KERNEL.read_text(), format="kernel")
    config = harness_config(backend="npu-twin", fit_max_bytes=SMALL_BYTES // 16, correctness_trials=1,
                            second_size_trials=0)
    assert verify(relu_task, candidate, config).feasible
    off = config.model_copy(update={"npu_twin": config.npu_twin.model_copy(update={"auto_sync": False})})
    verdict = verify(relu_task, candidate, off)
    assert (verdict.feasible, verdict.gate) == (False, "runtime"), verdict
    line = marked_line(KERNEL, "// SCALAR")
    assert f"twin fault [pipe-race]: LocalTensor::GetValue at kernel.cpp:{line}: PIPE_S reads UB" in verdict.reason, verdict.reason
    assert "--cce-auto-sync=off, the setting harness.npu_twin.auto_sync: false" in verdict.details + verdict.reason
