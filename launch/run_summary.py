"""summary.json of a run folder: one model, written by both campaigns, read by `run --resume` and `report`.

The single-process campaign (launch.campaign) and the Ray campaign (launch.ray_campaign.concurrent_campaign)
both write a `RunSummary`; `evokernel run --resume`, `evokernel report` and the benchmarks
read it back. It is rewritten atomically after every operator, so a killed run leaves the
last complete version. Fields only one mode fills (placement, timings) keep their defaults
in the other.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, computed_field, field_validator

from actors.errors import error_text
from actors.messages import EpisodeResult
from launch.atomic_file import write_atomically

SUMMARY_FILE = "summary.json"
INTERRUPTED = "interrupted"  # EpisodeResult.stopped_by and .error of an operator cut short by Ctrl-C or SIGTERM


class RunSummaryError(Exception):
    """summary.json is missing, not JSON, or not a run summary."""


class Totals(BaseModel):
    """Figures over every operator that finished (or was stopped) so far."""

    operators: int = 0
    feasible: int = 0
    feasible_rate: float = 0.0
    attempts: int = 0
    tokens: int = 0
    errors: int = Field(0, description="operators that ended with an error (not those a stop interrupted: "
                        "a resume runs them again)")
    median_speedup_vs_eager: float | None = None
    median_speedup_best_over_first: float | None = None

    @classmethod
    def of(cls, operators: list[EpisodeResult]) -> Totals:
        feasible = [op for op in operators if op.feasible]
        speedups = [op.speedup_vs_eager for op in feasible if op.speedup_vs_eager]
        gains = [op.speedup_best_over_first for op in feasible if op.speedup_best_over_first]
        return cls(
            operators=len(operators), feasible=len(feasible),
            feasible_rate=round(len(feasible) / len(operators), 4) if operators else 0.0,
            attempts=sum(op.attempts for op in operators), tokens=sum(op.tokens for op in operators),
            errors=sum(1 for op in operators if op.error and op.stopped_by != INTERRUPTED),
            median_speedup_vs_eager=statistics.median(speedups) if speedups else None,
            median_speedup_best_over_first=statistics.median(gains) if gains else None,
        )


class Placement(BaseModel):
    """Where a Ray campaign ran things (empty for a single-process run)."""

    episodes: dict[str, str] = Field(default_factory=dict, description="operator -> node id of its episode task")
    devices: list[dict[str, Any]] = Field(default_factory=list, description="the device pool's member stats")


class RunSummary(BaseModel):
    """One run folder's summary.json. Written runs fill every field; readers accept older or
    hand-written files with fields missing (their defaults)."""

    run_id: str | None = None
    started_at: str | None = None
    finished_at: str | None = Field(None, description="when the campaign stopped: it ran to the end, met an "
                                    "error, or (Ray) was interrupted; None while it runs, and after a "
                                    "single-process run was interrupted")
    mode: Literal["single-process", "ray"] | None = None
    settings: dict[str, Any] = Field(default_factory=dict, description="launch.config.Settings.redacted()")
    planned: list[str] = Field(default_factory=list, description="task ids, in the order they were planned")
    planned_paths: list[str] = Field(default_factory=list, description="their task files (what --resume runs)")
    operators: list[EpisodeResult] = Field(default_factory=list, description="one per operator that ended")
    error: str | None = Field(None, description="why the campaign stopped early (fatal LLM configuration, "
                              "lost endpoint, device pool)")
    interrupted: bool = Field(False, description="stopped by Ctrl-C or SIGTERM: `evokernel run --resume` continues")
    resumed_at: list[str] = Field(default_factory=list)
    lost_tries: dict[str, list[str]] = Field(default_factory=dict, description="(Ray) operators an episode of "
                                             "which was lost with its node, with what each lost try met; one "
                                             "that ran again to its end is in `operators` as that run ended "
                                             "(launch.ray_campaign.lost_operators)")
    placement: Placement = Field(default_factory=Placement)
    timings: dict[str, float] = Field(default_factory=dict, description="startup_s, episodes_s (Ray)")
    budget: dict[str, Any] | None = Field(None, description="the time budget (run.hours), what it spent and what it "
                                          "bought (launch/budget.py); None without one")

    @field_validator("operators")
    @classmethod
    def _one_line_errors(cls, operators: list[EpisodeResult]) -> list[EpisodeResult]:
        """An operator's error is one readable line (a remote traceback's last line, no colour
        codes), whoever set it: the traceback is in the log."""
        return [op.model_copy(update={"error": error_text(op.error)}) if op.error and op.error != error_text(op.error)
                else op for op in operators]

    @field_validator("error")
    @classmethod
    def _one_line_error(cls, error: str | None) -> str | None:
        return error_text(error) if error else error

    @computed_field  # type: ignore[prop-decorator]
    @property
    def totals(self) -> Totals:
        return Totals.of(self.operators)

    def write(self, run_dir: Path) -> None:
        """Replace RUN_DIR/summary.json atomically (a reader never sees half a file)."""
        write_atomically(Path(run_dir) / SUMMARY_FILE, self.model_dump_json(indent=2))

    @classmethod
    def load(cls, run_dir: Path) -> RunSummary:
        """RUN_DIR/summary.json, validated; RunSummaryError says what is wrong with it."""
        path = Path(run_dir) / SUMMARY_FILE
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RunSummaryError(f"cannot read {path}: {exc}") from None
        try:
            return cls.model_validate_json(text)
        except ValidationError as exc:
            raise RunSummaryError(f"{path} is not a run summary: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    """The first problem pydantic found, as `where: what` (the full list is long and repetitive)."""
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "the file"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"
