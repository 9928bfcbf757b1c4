"""RUN_DIR/kernels/index.json: what launch.kernel_files wrote, as the report and export read it
(a light module: no torch)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from npu_pool.verdict import StageProfile

KERNELS_DIR = "kernels"
INDEX_FILE = "index.json"
Which = Literal["best", "first"]


class KernelEntry(BaseModel):
    """One row of kernels/index.json."""

    task: str
    kernel: Which
    source: str = Field(..., description="the candidate source as verified, relative to kernels/")
    modelnew: str | None = Field(None, description="a standalone KernelBench ModelNew file, relative to kernels/")
    modelnew_note: str | None = Field(None, description="why there is no ModelNew file")
    latency_ms: float | None = None
    speedup_vs_eager: float | None = None
    iteration: int
    attempt_id: str | None = None
    backend: str
    candidate_format: str
    sizes: dict[str, int] = Field(default_factory=dict)
    input_shapes: dict[str, list[int]] = Field(default_factory=dict)
    level: int | None = None
    problem: int | None = None
    timestamp: str = ""
    stages: StageProfile | None = Field(None, description="its modelled profile on the Ascend C twin (time per stage, "
                                        "cores, double buffering): the first and best side by side in the report")


class KernelIndex(BaseModel):
    kernels: list[KernelEntry] = Field(default_factory=list)

    @classmethod
    def load(cls, kernels_dir: Path) -> KernelIndex:
        path = Path(kernels_dir) / INDEX_FILE
        if not path.is_file():
            return cls()
        return cls.model_validate_json(path.read_text(encoding="utf-8"))


def kept_kernels(run_dir: Path, problems: list[str]) -> list[KernelEntry]:
    """The kernels RUN_DIR/kernels/index.json lists (the report's kernels table); an index that
    does not read is stated in `problems`, and no kernel is listed."""
    try:
        return KernelIndex.load(Path(run_dir) / KERNELS_DIR).kernels
    except ValueError as exc:
        problems.append(f"{KERNELS_DIR}/index.json is not a kernel index: ignored ({str(exc)[:200]})")
        return []
