"""A content-addressed build cache for candidates that call `load_inline`.

A cached build is imported straight from its `.so`, without load_inline.

`use_pch` is served by our own precompiled `torch/extension.h`, one per set of compiler
flags, in `<cache>/pch/<key>/torch/extension.h.gch`, put first on the include path (GCC
looks for `name.h.gch` in each include directory before `name.h`). torch's own `use_pch`
keeps a single header per installation and rebuilds it (minutes) whenever a build uses
other flags, so candidates with different flags would rebuild it in turn.

Candidates pick their own extension names, so two candidates called "relu_ext" would
overwrite each other's build and reuse each other's module. Inside the sandboxed worker,
`load_inline` is wrapped so that its build directory and module name are keyed by a hash
of everything that determines the binary (sources, functions, flags, torch and Python
versions, the host's `-march=native` target, and the backend's toolchain identity: the
compiler's version line; on CUDA the device's compute capability, nvcc's and torch's CUDA
versions and TORCH_CUDA_ARCH_LIST; on an NPU the SoC and the CANN version); the same source
compiles once and loads instantly in every later process.

A build that dies (the compile limit, a kill -9, a crash) leaves torch's `lock` in its build
folder, and torch's next build of that folder would sleep on it for good, then import a
`.so` that was never built. So each build, and each check of a build folder, holds an
`flock` on `<folder>.flock` beside it: it works across processes, sandboxes and PID
namespaces, and the kernel drops it when its holder dies. Holding it, a `lock` in the
folder can only be a dead build's: the folder is removed and built from scratch. A second
worker with the same source waits for the first one's build and imports it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

_KEYED = ("cpp_sources", "cuda_sources", "functions", "extra_cflags", "extra_cuda_cflags",
          "extra_ldflags", "extra_include_paths", "with_cuda", "use_pch", "is_python_module")


@functools.cache
def compiler_identity(compiler: str) -> str:
    """The compiler's version line: part of every build key."""
    import subprocess

    try:
        return subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return compiler


@functools.cache
def host_target(compiler: str = "g++") -> str:
    """What `-march=native` means on this host (e.g. `skylake-avx512 skylake-avx512`), or
    the CPU model: part of every build key, so a cache shared between machines (an NFS
    home on a cluster) never hands one CPU a binary built for another's instructions."""
    import subprocess

    try:
        out = subprocess.run([compiler, "-march=native", "-Q", "--help=target"], capture_output=True, text=True,
                             timeout=30).stdout
        found = [line.split()[-1] for line in out.splitlines() if line.strip().startswith(("-march=", "-mtune="))]
        if found:
            return " ".join(found)
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name"))
    except (OSError, StopIteration):
        import platform

        return platform.machine()


def build_key(name: str, kwargs: dict[str, Any], identity: dict[str, str] | None = None) -> str:
    """The cache key of one load_inline build; `identity` is `Backend.toolchain_identity()`."""
    import torch

    material = {k: kwargs.get(k) for k in _KEYED}
    material.update(name=name, torch=torch.__version__, python=sys.version, host=host_target(),
                    toolchain=dict(sorted((identity or {}).items())))
    return hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()[:20]


def install(cache_dir: Path, defaults: dict[str, Any], record: list[dict[str, Any]],
            identity: dict[str, str] | None = None) -> None:
    """Wrap torch.utils.cpp_extension.load_inline for the rest of this process.

    `defaults` (e.g. use_pch) apply where the candidate did not say; every build is
    appended to `record` with its key, whether it was already cached, the seconds it waited
    for another process's build of it (`waited_s`, from 0.1 s) and whether it cleared a dead
    build's folder (`stale_build_cleared`); `identity` (the backend's toolchain identity) is
    part of every key.
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
        key = build_key(name, kwargs, identity)
        module_name = f"{name}_{key}"
        build_dir = cache_dir / f"{name}-{key}"
        built = build_dir / f"{module_name}.so"
        start = time.perf_counter()
        with build_claim(build_dir):  # waits while another worker builds this source
            waited = time.perf_counter() - start
            stale = clear_stale_build(build_dir)
            cached = built.exists() and kwargs.get("is_python_module", True)
            if not cached:
                module = original(module_name, verbose=False, **_build_kwargs(cache_dir, build_dir, kwargs))
        if cached:  # complete (no lock was left): import it outside the claim
            module = _import_extension(module_name, built)
        record.append({"name": name, "key": key, "cached": cached, "seconds": time.perf_counter() - start,
                       **({"waited_s": waited} if waited >= 0.1 else {}), **({"stale_build_cleared": True} if stale else {})})
        return module

    cpp_extension.load_inline = keyed_load_inline


def _build_kwargs(cache_dir: Path, build_dir: Path, kwargs: dict[str, Any]) -> dict[str, Any]:
    """load_inline's arguments for a build into `build_dir`, with our precompiled header."""
    build_dir.mkdir(parents=True, exist_ok=True)
    kwargs["build_directory"] = str(build_dir)
    kwargs.pop("verbose", None)
    if kwargs.pop("use_pch", False) and not kwargs.get("no_implicit_headers"):
        pch_dir = precompiled_header_dir(cache_dir, kwargs.get("extra_cflags"), kwargs.get("extra_include_paths"))
        if pch_dir is not None:
            kwargs["extra_include_paths"] = [pch_dir, *(kwargs.get("extra_include_paths") or [])]
    return kwargs


@contextlib.contextmanager
def build_claim(build_dir: Path) -> Iterator[None]:
    """Hold an exclusive flock on `<build_dir>.flock` (waiting while another process holds
    it): every check and build of `build_dir` runs under it. The sidecar sits beside the
    folder, so removing the folder never removes it (an unlinked lock file would let two
    holders lock two files). The kernel releases it when its holder dies, however it dies."""
    import fcntl
    import os

    build_dir.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(f"{build_dir}.flock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # drops the flock


def clear_stale_build(build_dir: Path) -> bool:
    """Under build_claim: remove `build_dir` with its partial outputs when torch's `lock`
    (its FileBaton) is in it. Every live build holds the claim, so that lock is a dead
    build's, and torch would wait on it for good. True when it removed the folder."""
    import shutil

    if not (build_dir / "lock").exists():
        return False
    shutil.rmtree(build_dir)
    return True


def _import_extension(module_name: str, path: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import the cached extension {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[module_name] = module
    return module


def precompiled_header_dir(cache_dir: Path, extra_cflags: Any, extra_include_paths: Any) -> str | None:
    """The include directory holding a precompiled torch/extension.h for these flags, built
    on first use (under a lock); None when it cannot be built (the build then parses the
    header as usual)."""
    import fcntl
    import os
    import subprocess
    import sysconfig

    import torch
    from torch.utils.cpp_extension import get_cxx_compiler, include_paths

    flags = [str(f) for f in (extra_cflags or [])]
    includes = [os.path.abspath(str(p)) for p in (extra_include_paths or [])]
    compiler = get_cxx_compiler()
    # torch's include folder is in the key: the header is linked beside its precompiled form, and
    # a checkout with its own environment may not read (nor want) another environment's header
    key = hashlib.sha256(json.dumps([flags, includes, torch.__version__, include_paths()[0], compiler,
                                     compiler_identity(compiler), host_target()]).encode()).hexdigest()[:16]
    root = cache_dir / "pch" / key
    target = root / "torch" / "extension.h.gch"
    if target.exists() and target.with_suffix("").exists():
        return str(root)
    target.parent.mkdir(parents=True, exist_ok=True)
    with (root / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        header = Path(include_paths()[0]) / "torch" / "extension.h"
        if not target.with_suffix("").exists():
            # The header itself beside its precompiled form: a second `#include` of it (the
            # candidate's, after load_inline's own) resolves here and #pragma once skips it.
            target.with_suffix("").symlink_to(header)
        if target.exists():
            return str(root)
        tmp = target.with_name(f".extension.h.gch.{os.getpid()}")
        # The flags load_inline compiles with, minus the per-module name (unused by the header).
        cmd = [compiler, "-x", "c++-header", str(header), "-o", str(tmp),
               *(f"-I{p}" for p in includes), *(arg for p in include_paths() for arg in ("-isystem", p)),
               "-isystem", sysconfig.get_path("include"), "-DTORCH_API_INCLUDE_EXTENSION_H", "-fPIC", "-std=c++20", *flags]
        try:
            subprocess.run(cmd, capture_output=True, check=True, timeout=900)
        except (OSError, subprocess.SubprocessError):
            tmp.unlink(missing_ok=True)
            return None
        os.replace(tmp, target)
    return str(root)


def cached_library(cache_dir: Path, key: str, work_dir: Path, source_name: str, text: str,
                   build: Callable[[Path, Path], None]) -> Path:
    """`cache_dir/kernel-<key>.so`, made by `build(source, target)` unless it is there. The
    source is written to `work_dir/source_name`; the target is a temporary name on the cache's
    filesystem, renamed into place after the build, so concurrent builds of one source agree."""
    import os

    artifact = cache_dir / f"kernel-{key}.so"
    if artifact.exists():
        return artifact
    source = work_dir / source_name
    source.write_text(text)
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / f".kernel-{key}-{os.getpid()}.so"
    build(source, target)
    os.replace(target, artifact)
    return artifact
