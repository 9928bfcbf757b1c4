"""The `evokernel` command starts, lists its subcommands and reports errors cleanly."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from launch import __version__
from launch.cli import COMMAND_MODULES, main


def test_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for name in COMMAND_MODULES:
        assert f"    {name} " in out or f"    {name}\n" in out


def test_version(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"evokernel {__version__}"


def test_console_script_runs_in_a_fresh_process():
    result = subprocess.run([sys.executable, "-m", "launch.cli", "--version"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert __version__ in result.stdout


def test_config_show_redacts_the_api_key(capsys, monkeypatch):
    monkeypatch.setenv("EVOKERNEL_LLM__API_KEY", "sk-test-0123456789abcdef")
    assert main(["--set", "memory.alpha=0.35", "config", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["memory"]["alpha"] == 0.35
    assert shown["llm"]["api_key"] == "**********"


def test_set_before_and_after_the_command_both_count_the_later_winning(capsys):
    """A command's own --set list used to replace the one given before the command."""
    assert main(["--set", "memory.alpha=0.35", "--set", "llm.seed=3", "config", "--set", "llm.seed=4",
                 "--set", "memory.epsilon=0.2", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["memory"]["alpha"], shown["memory"]["epsilon"], shown["llm"]["seed"]) == (0.35, 0.2, 4)


def test_bad_config_value_is_a_clear_error(capsys):
    assert main(["--set", "memory.alpha=not-a-number", "config", "show"]) == 2
    assert "invalid configuration" in capsys.readouterr().err


def test_unknown_subcommand_is_a_usage_error():
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == 2


def test_doctor_checks_this_machine(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "ok    compiler" in out and "cpu: available" in out
    assert "checks passed" in out
    assert "info  memory      this machine may hold " in out and "harness.memory_limit_mb" in out  # issue 55
    reads = next(line for line in out.splitlines() if line.lstrip().startswith(("ok    reads", "FAIL  reads")))
    assert reads.lstrip().startswith("ok") and ("/usr" in reads or "no Landlock" in reads)
    assert str(Path.home()) + "," not in reads  # never the whole home folder
