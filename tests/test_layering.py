"""Nothing below launch/ imports launch/ (DESIGN.md section 4)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOWER_PACKAGES = ["actors", "memory_actor", "npu_pool"]


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", LOWER_PACKAGES)
def test_lower_packages_never_import_launch(package):
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / package).rglob("*.py")
        if any(name == "launch" or name.startswith("launch.") for name in _imported_modules(path))
    ]
    assert not offenders, f"these modules import launch/: {offenders}"


@pytest.mark.parametrize("package", ["memory_actor", "npu_pool"])
def test_bottom_layers_do_not_import_actors(package):
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / package).rglob("*.py")
        if any(name == "actors" or name.startswith("actors.") for name in _imported_modules(path))
    ]
    assert not offenders, f"these modules import actors/: {offenders}"
