"""Packaging: the wheel carries the bundled suite, and the Ray requirement is what the cluster files pin."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
CLUSTER_FILES = [REPO / "cluster.yaml", REPO / "examples" / "cluster-aws.yaml"]
SOURCES = ["pyproject.toml", "README.md", "actors", "memory_actor", "npu_pool", "launch", "suites"]


def _ray_requirement() -> Requirement:
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    [ray] = [Requirement(d) for d in dependencies if Requirement(d).name == "ray"]
    return ray


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=lambda p: p.name)
def test_the_ray_requirement_is_exactly_what_the_cluster_installs(path):
    pinned = re.findall(r"ray\[default\]==([0-9][0-9.]*)", path.read_text())
    assert pinned, f"{path.name} installs no pinned ray[default]"
    requirement = _ray_requirement()
    assert "default" in requirement.extras
    # Exactly one version admitted, and it is the cluster's: a driver of another version cannot join.
    assert [(spec.operator, spec.version) for spec in requirement.specifier] == [("==", pinned[0])]


def test_the_installed_ray_is_the_pinned_one():
    import ray

    assert _ray_requirement().specifier.contains(ray.__version__)


def test_a_built_wheel_installs_the_bundled_suite_where_default_suite_looks(tmp_path):
    """A non-editable install (the wheel unpacked into a folder) finds the suite without --suite."""
    source = tmp_path / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in SOURCES:
        origin = REPO / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=ignore)
        else:
            shutil.copy2(origin, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path / "dist"),
                    str(source)], check=True, capture_output=True, timeout=120)
    [wheel] = (tmp_path / "dist").glob("evokernel-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    bundled = sorted(str(p.relative_to(REPO)) for p in (REPO / "suites").rglob("*") if p.is_file()
                     and "__pycache__" not in p.parts)
    assert bundled and set(bundled) <= set(names), sorted(set(bundled) - set(names))[:5]

    site = tmp_path / "site"
    subprocess.run([*pip, "install", "--no-deps", "--no-index", "-q", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=120)
    probe = ("import launch.campaign as c; s = c.default_suite(); "
             "print(c.__file__); print(s); print(len(c.select_tasks(s)))")
    # -P and a neutral working folder: the installed copy is imported, not this checkout.
    shown = subprocess.run([sys.executable, "-P", "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                           timeout=120, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    assert shown.returncode == 0, shown.stderr[-2000:]
    module, suite, count = shown.stdout.split()
    assert Path(module).is_relative_to(site) and Path(suite) == site / "suites" / "cpu"
    assert int(count) == len([p for p in bundled if p.endswith(".py")])
