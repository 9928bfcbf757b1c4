"""A Python with only EvoKernel's light dependencies: the modules of every installed distribution
outside the requirement closure of LIGHT are not found (ModuleNotFoundError, find_spec None), as on
a machine where it is not installed.

    python tests/launch/light_python.py -m launch.cli verify TASK CANDIDATE
    python tests/launch/light_python.py -m npu_pool.sandbox.warm_worker ...
    python tests/launch/light_python.py -c CODE

Used by test_cli_lazy.py, and as the `sys.executable` of the process it starts, so the sandbox's
warm server (started as `sys.executable -m npu_pool.sandbox.warm_worker`) runs under the same rule.
With $EVOKERNEL_IMPORTED set, the names of the imported modules are written there at exit, then
a line "# refused: ..." naming the hidden modules something tried to import.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import importlib.metadata
import os
import re
import runpy
import site
import sys

# What `evokernel verify`, `profile` and `tasks check` may need (pyproject's non-heavy dependencies).
LIGHT = ("torch", "numpy", "pydantic", "pydantic-settings", "pyyaml", "structlog")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def light_closure(roots=LIGHT) -> set[str]:
    """The distributions `roots` need, transitively: every requirement but those of extras (a
    platform marker is not evaluated: that errs towards allowing). Parsed without `packaging`,
    which is itself no light dependency and must not be left imported."""
    seen: set[str] = set()
    todo = [_normal(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for line in requires:
            requirement, _, marker = line.partition(";")
            if "extra" not in marker:
                todo.append(_normal(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement).group(1)))
    return seen


class HideHeavy(importlib.abc.MetaPathFinder):
    """Stands in for the PathFinder of sys.meta_path and finds nothing of the installed
    distributions outside `allowed`: importing one raises ModuleNotFoundError, and
    importlib.util.find_spec answers None, exactly as where it is not installed."""

    def __init__(self, allowed: set[str], path_finder):
        owners = importlib.metadata.packages_distributions()
        self.hidden = {top for top, dists in owners.items()
                       if top not in sys.stdlib_module_names and not {_normal(d) for d in dists} & allowed
                       and _normal(dists[0]) != "evokernel"}
        self.path_finder = path_finder
        self.site_dirs = {*site.getsitepackages(), site.getusersitepackages()}
        self.refused: list[str] = []

    def find_spec(self, name, path=None, target=None):
        if path is None and name in self.hidden:
            # Not from site-packages; from elsewhere on sys.path it is no installed distribution
            # (setuptools puts its own vendored copies, `packaging` among them, on sys.path).
            spec = self.path_finder.find_spec(name, [p for p in sys.path if p not in self.site_dirs], target)
            if spec is None:
                self.refused.append(name)
            return spec
        return self.path_finder.find_spec(name, path, target)

    def invalidate_caches(self):
        self.path_finder.invalidate_caches()


def install() -> HideHeavy:
    [index] = [i for i, f in enumerate(sys.meta_path) if f is importlib.machinery.PathFinder]
    finder = HideHeavy(light_closure(), sys.meta_path[index])
    sys.meta_path[index] = finder
    return finder


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[0] not in ("-m", "-c"):
        raise SystemExit("usage: light_python.py -m MODULE [ARGS...] | -c CODE [ARGS...]")
    finder = install()
    record = os.environ.get("EVOKERNEL_IMPORTED")
    if record:
        atexit.register(lambda: open(record, "a").write(
            "\n".join(sorted(sys.modules)) + "\n# refused: " + " ".join(finder.refused) + "\n"))
    # Processes this one starts with `sys.executable` (the sandbox's warm server) get the same rule.
    sys.executable = os.environ.get("EVOKERNEL_LIGHT_EXECUTABLE", sys.executable)
    if argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
