"""The one configuration model: defaults < YAML file < EVOKERNEL_* environment < flags.

Each package owns the settings of its own section; this module composes them, so
nothing below launch/ needs to import it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from actors.config import EpisodeConfig, LLMConfig
from launch.local_llm.config import LocalLLMConfig
from memory_actor.config import MemoryConfig
from npu_pool.config import HarnessConfig

CONFIG_ENV_VAR = "EVOKERNEL_CONFIG"


class RayConfig(BaseModel):
    """Where the actors run."""

    model_config = ConfigDict(extra="forbid")

    address: str = Field("local", description="local (start one here), auto (join a running cluster) or ADDR")
    namespace: str = Field("evokernel")
    max_in_flight: int = Field(8, ge=1, description="operators whose episodes run at once")
    fake_devices: str | None = Field(
        None, description="KIND:N, e.g. npu:4: declare N NPUs or GPUs to a local Ray instance (pinning runs "
        "for real, kernels are evaluated with the cpu backend)"
    )
    devices: int | None = Field(None, ge=1, description="use at most N devices; default: all")
    cpus_per_device: float = Field(1.0, gt=0, description="CPU cores per evaluation slot where there is no accelerator")

    @field_validator("fake_devices")
    @classmethod
    def _fake_devices_spec(cls, value: str | None) -> str | None:
        if value is not None:
            from npu_pool.devices import FakeDevices

            FakeDevices.parse(value)  # raises ValueError with the expected form
        return value


class RunConfig(BaseModel):
    """What a campaign runs and where it writes."""

    model_config = ConfigDict(extra="forbid")

    suite: str | None = Field(None, description="task folder; default: the bundled CPU suite")
    tasks: str = Field("*", description="glob over task file names")
    out: str | None = Field(None, description="run folder; default: runs/<timestamp>")
    hours: float | None = Field(None, gt=0, description="the run's wall-time budget over all its sessions (`--hours`): "
                                "attempts go where the expected gain per attempt is highest and the run ends at the "
                                "budget, resumable (launch/budget.py); none: every operator runs to its caps")


class Settings(BaseSettings):
    """Everything EvoKernel can be told, in one place."""

    model_config = SettingsConfigDict(
        env_prefix="EVOKERNEL_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    llm: LLMConfig = Field(default_factory=LLMConfig)
    local_llm: LocalLLMConfig = Field(default_factory=LocalLLMConfig)
    episode: EpisodeConfig = Field(default_factory=EpisodeConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    harness: HarnessConfig = Field(default_factory=HarnessConfig)
    ray: RayConfig = Field(default_factory=RayConfig)
    run: RunConfig = Field(default_factory=RunConfig)
    log_json: bool | None = Field(None, description="JSON logs; default: JSON unless stderr is a terminal")
    log_level: str = Field("info")

    def redacted(self) -> dict[str, Any]:
        """A JSON-ready dump with every secret replaced by '**********'."""
        return _redact_secrets(self.model_dump(mode="python"))


def _redact_secrets(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return "**********" if value.get_secret_value() else ""
    if isinstance(value, dict):
        return {k: _redact_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_secrets(v) for v in value]
    return value


def load_settings(config_file: str | Path | None = None, overrides: dict[str, Any] | None = None) -> Settings:
    """Build the settings from a YAML file (or $EVOKERNEL_CONFIG), the environment and flags.

    `overrides` is a nested dict of flag values (only those the user gave); it wins over
    everything else, the environment wins over the file.
    """
    path = config_file or os.environ.get(CONFIG_ENV_VAR)
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"config file not found: {path}")
        # Fail early and clearly on a malformed file rather than inside pydantic-settings.
        loaded = yaml.safe_load(path.read_text()) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"config file {path} must hold a mapping at the top level")

    class _FileBackedSettings(Settings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
            if path is not None:
                sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=path))
            return tuple(sources)

    built = _FileBackedSettings(**(overrides or {}))
    # exclude_unset keeps `model_fields_set` meaningful: what the user set (file, environment,
    # flags), even to a default value, is told apart from defaults (launch.local_llm.settings).
    return Settings.model_validate(built.model_dump(exclude_unset=True))


def set_dotted(target: dict[str, Any], dotted_key: str, value: Any) -> None:
    """Put `value` at `a.b.c` inside a nested dict, creating levels as needed."""
    *parents, leaf = dotted_key.split(".")
    node = target
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
