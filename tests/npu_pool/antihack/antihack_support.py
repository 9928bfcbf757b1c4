"""Shared helpers of the static anti-hack gate's tests (test_antihack_*.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from npu_pool.antihack import Finding, check_kernel_source, check_python_candidate

HERE = Path(__file__).resolve().parents[1]  # tests/npu_pool: hostile/ and candidates/ live there
HOSTILE = sorted((HERE / "hostile").iterdir())
GOOD = sorted(p for folder in HERE.glob("candidates/good*") for p in folder.iterdir() if p.suffix in (".py", ".cpp"))


def _check_file(path: Path) -> list[Finding]:
    source = path.read_text()
    if path.suffix == ".py":
        return check_python_candidate(source)
    return check_kernel_source(source, "cpp")


def _module(body: str) -> str:
    return "import torch\nimport torch.nn as nn\n" + textwrap.dedent(body)


def _rules(findings: list[Finding], severity: str = "reject") -> set[str]:
    return {f.rule for f in findings if f.severity == severity}
