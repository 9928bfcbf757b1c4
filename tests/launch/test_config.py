"""Configuration precedence: defaults < YAML file < EVOKERNEL_* environment < flags."""

import pytest

from launch.cli import build_parser, config_overrides
from launch.config import load_settings


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "evokernel.yaml"
    path.write_text(
        "llm:\n  model: from-file\n  base_url: http://file:1/v1\nmemory:\n  alpha: 0.5\n  epsilon: 0.3\nepisode:\n  iterations: 7\n"
    )
    return path


def test_defaults_without_any_source(monkeypatch):
    monkeypatch.delenv("EVOKERNEL_CONFIG", raising=False)
    settings = load_settings()
    assert settings.memory.alpha == 0.2
    assert settings.episode.iterations == 30
    assert settings.llm.base_url is None


def test_file_then_env_then_flags(config_file, monkeypatch):
    monkeypatch.setenv("EVOKERNEL_LLM__MODEL", "from-env")
    monkeypatch.setenv("EVOKERNEL_MEMORY__EPSILON", "0.05")
    args = build_parser().parse_args(["--config", str(config_file), "run", "--llm-model", "from-flag"])
    settings = load_settings(args.config, config_overrides(args))
    assert settings.llm.model == "from-flag"  # flag beats env and file
    assert settings.memory.epsilon == 0.05  # env beats file
    assert settings.memory.alpha == 0.5  # file beats default
    assert settings.llm.base_url == "http://file:1/v1"  # untouched file value survives the merge
    assert settings.episode.iterations == 7


def test_config_file_from_environment_variable(config_file, monkeypatch):
    monkeypatch.setenv("EVOKERNEL_CONFIG", str(config_file))
    assert load_settings().llm.model == "from-file"


def test_missing_config_file_is_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="config file not found"):
        load_settings(tmp_path / "nope.yaml")


def test_unknown_keys_are_rejected(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("llm:\n  modle: typo\n")
    with pytest.raises(ValueError, match="modle"):
        load_settings(path)


def test_set_flag_parses_yaml_values(monkeypatch):
    monkeypatch.delenv("EVOKERNEL_CONFIG", raising=False)
    args = build_parser().parse_args(["--set", "episode.iterations=12", "--set", "harness.sizes=original", "config", "show"])
    settings = load_settings(None, config_overrides(args))
    assert settings.episode.iterations == 12
    assert settings.harness.sizes == "original"


def test_common_options_work_after_the_subcommand_too(config_file, monkeypatch):
    monkeypatch.delenv("EVOKERNEL_CONFIG", raising=False)
    args = build_parser().parse_args(
        ["--set", "memory.alpha=0.4", "run", "--config", str(config_file), "--set", "episode.iterations=3", "--log-json"])
    settings = load_settings(args.config, config_overrides(args))
    assert settings.episode.iterations == 3
    assert settings.llm.model == "from-file"
    assert settings.log_json is True


def test_options_before_the_subcommand_survive_when_none_follow(config_file, monkeypatch):
    monkeypatch.delenv("EVOKERNEL_CONFIG", raising=False)
    args = build_parser().parse_args(["--config", str(config_file), "--set", "memory.alpha=0.4", "run"])
    settings = load_settings(args.config, config_overrides(args))
    assert settings.memory.alpha == 0.4 and settings.llm.model == "from-file"


def test_device_pool_settings_come_from_any_source(tmp_path, monkeypatch):
    path = tmp_path / "cluster.yaml"
    path.write_text("ray:\n  fake_devices: npu:4\n  cpus_per_device: 2\n")
    monkeypatch.setenv("EVOKERNEL_RAY__DEVICES", "3")
    args = build_parser().parse_args(["--config", str(path), "run", "--fake-devices", "cuda:2"])
    settings = load_settings(args.config, config_overrides(args))
    assert (settings.ray.fake_devices, settings.ray.devices, settings.ray.cpus_per_device) == ("cuda:2", 3, 2.0)
    with pytest.raises(ValueError, match="KIND:COUNT"):
        load_settings(overrides={"ray": {"fake_devices": "tpu:3"}})
