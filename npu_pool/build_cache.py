"""A content-addressed build cache for candidates that call `load_inline`.

A cached build is imported straight from its `.so`, without load_inline: load_inline would
re-check torch's precompiled header first, and rebuild it (a minute) whenever another
build used other flags. Builds that use the precompiled header hold a file lock, because
torch keeps one such header per installation and rewrites it in place.

Candidates pick their own extension names, so two candidates called "relu_ext" would
overwrite each other's build and reuse each other's module. Inside the sandboxed worker,
`load_inline` is wrapped so that its build directory and module name are keyed by a hash
of everything that determines the binary (sources, functions, flags, torch and Python
versions); the same source compiles once and loads instantly in every later process.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

_KEYED = ("cpp_sources", "cuda_sources", "functions", "extra_cflags", "extra_cuda_cflags",
          "extra_ldflags", "extra_include_paths", "with_cuda", "use_pch", "is_python_module")


def build_key(name: str, kwargs: dict[str, Any]) -> str:
    import torch

    material = {k: kwargs.get(k) for k in _KEYED}
    material.update(name=name, torch=torch.__version__, python=sys.version)
    return hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()[:20]


def install(cache_dir: Path, defaults: dict[str, Any], record: list[dict[str, Any]]) -> None:
    """Wrap torch.utils.cpp_extension.load_inline for the rest of this process.

    `defaults` (e.g. use_pch) apply where the candidate did not say; every build is
    appended to `record` with its key and whether it was already cached.
    """
    import time

    import torch.utils.cpp_extension as cpp_extension

    original = cpp_extension.load_inline

    def keyed_load_inline(name: str, cpp_sources: Any, *args: Any, **kwargs: Any) -> Any:
        positional = ("cuda_sources", "sycl_sources", "functions", "extra_cflags", "extra_cuda_cflags",
                      "extra_sycl_cflags", "extra_ldflags", "extra_include_paths", "build_directory")
        kwargs.update(zip(positional, args, strict=False))
        for key, value in defaults.items():
            kwargs.setdefault(key, value)
        kwargs["cpp_sources"] = cpp_sources
        key = build_key(name, kwargs)
        module_name = f"{name}_{key}"
        build_dir = cache_dir / f"{name}-{key}"
        built = build_dir / f"{module_name}.so"
        start = time.perf_counter()
        if built.exists() and kwargs.get("is_python_module", True):
            module = _import_extension(module_name, built)
            record.append({"name": name, "key": key, "cached": True, "seconds": time.perf_counter() - start})
            return module
        build_dir.mkdir(parents=True, exist_ok=True)
        kwargs["build_directory"] = str(build_dir)
        kwargs.pop("verbose", None)
        with _pch_lock(cache_dir, bool(kwargs.get("use_pch"))):
            module = original(module_name, verbose=False, **kwargs)
        record.append({"name": name, "key": key, "cached": False, "seconds": time.perf_counter() - start})
        return module

    cpp_extension.load_inline = keyed_load_inline


def _import_extension(module_name: str, path: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import the cached extension {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[module_name] = module
    return module


class _pch_lock:
    """An exclusive lock around builds that read or rewrite torch's precompiled header."""

    def __init__(self, cache_dir: Path, active: bool):
        self.path, self.active, self.fh = cache_dir / "pch.lock", active, None

    def __enter__(self) -> None:
        if self.active:
            import fcntl

            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fh = self.path.open("w")
            fcntl.flock(self.fh, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        if self.fh is not None:
            self.fh.close()  # closing releases the lock
