"""What `evokernel run --resume RUN_DIR` runs with: the run's recorded settings, the flags given
now on top, the secrets from here, and the run's own bank."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from launch.cli import UsageError
from launch.config import Settings


def resumed_settings(args: argparse.Namespace, current: Settings, run_dir: Path) -> Settings:
    """The run's recorded settings (secrets from here), with the flags given now on top."""
    from actors.llm_client import llm_reachable
    from launch.campaign import CampaignError, load_summary
    from launch.cli import config_overrides

    try:
        recorded = load_summary(run_dir).settings
    except CampaignError as exc:
        raise UsageError(str(exc)) from None
    given = config_overrides(args)
    _keeps_its_bank(recorded, given, run_dir)
    merged = _merge(_without_redacted(recorded), given)
    llm = merged.setdefault("llm", {})
    llm["api_key"] = current.llm.api_key
    if "base_url" not in given.get("llm", {}) and not llm_reachable(llm.get("base_url")):
        llm["base_url"] = None  # e.g. the local model server of the stopped run: serve a fresh one
    try:
        return Settings.model_validate(merged)
    except ValueError as exc:
        raise UsageError(f"the settings recorded in {run_dir}/summary.json are not valid here: {exc}") from None


def _keeps_its_bank(recorded: dict[str, Any], given: dict[str, Any], run_dir: Path) -> None:
    """A resume naming another bank than its run's, while that one is still there, is refused:
    the run would learn half in each, and take back its redone updates from the wrong one. (A
    bank that moved, its old path gone, may be named anew.)"""
    from memory_actor.disk.lease import is_local, local_path

    old, new = recorded.get("memory", {}).get("uri"), given.get("memory", {}).get("uri")
    if not old or not new or old == new:
        return
    if is_local(old) and is_local(new):
        if local_path(old) == local_path(new) or not os.path.exists(local_path(old)):
            return
    raise UsageError(f"{run_dir} learned into the memory bank {old}: a resume continues with it "
                     f"(leave out --memory), or start a new run with --memory {new}")


def _without_redacted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_redacted(v) for k, v in value.items() if v != "**********"}
    return value


def _merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        merged[key] = _merge(merged.get(key) or {}, value) if isinstance(value, dict) else value
    return merged
