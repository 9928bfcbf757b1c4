"""A content-addressed build cache for candidates that call `load_inline`.

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
        build_dir = cache_dir / f"{name}-{key}"
        cached = any(build_dir.glob("*.so"))
        build_dir.mkdir(parents=True, exist_ok=True)
        kwargs["build_directory"] = str(build_dir)
        kwargs.pop("verbose", None)
        start = time.perf_counter()
        module = original(f"{name}_{key}", verbose=False, **kwargs)
        record.append({"name": name, "key": key, "cached": cached, "seconds": time.perf_counter() - start})
        return module

    cpp_extension.load_inline = keyed_load_inline
