"""Shared helpers of the harness tests (tasks, candidates and a fast test configuration)."""

from __future__ import annotations

from pathlib import Path

from npu_pool.config import HarnessConfig
from npu_pool.paths import cache_root
from npu_pool.tasks.spec import TaskSpec, load_task
from npu_pool.verdict import Candidate, detect_format

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SUITE = ROOT / "suites" / "cpu"
A3_CANDIDATES = Path(__file__).resolve().parent / "candidates"
SMALL_BYTES = 4 * 2**20


def harness_config(**overrides) -> HarnessConfig:
    """Small sizes, few trials, a persistent build cache: a second test run compiles nothing."""
    values = dict(build_cache_dir=str(cache_root() / "test-build"), fit_max_bytes=SMALL_BYTES, timed_trials=5,
                  warmup_trials=1, compile_baseline=False, run_timeout_s=30.0, memory_limit_mb=4096)
    values.update(overrides)
    return HarnessConfig(**values)


def fixture_task(name: str, max_bytes: int = SMALL_BYTES) -> TaskSpec:
    return load_task(FIXTURES / "tasks" / f"{name}.py", max_bytes=max_bytes)


def candidate_file(path: Path) -> Candidate:
    source = path.read_text()
    return Candidate(source=source, format=detect_format(source))


def fixture_candidate(name: str) -> Candidate:
    return candidate_file(FIXTURES / "candidates" / name)


def header(path: Path, key: str) -> str | None:
    """A `// key: value` or `# key: value` line from a candidate's header."""
    for line in path.read_text().splitlines()[:6]:
        stripped = line.lstrip("/# ").strip()
        if stripped.startswith(f"{key}:"):
            return stripped.split(":", 1)[1].strip()
    return None
