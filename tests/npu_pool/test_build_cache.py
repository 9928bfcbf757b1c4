"""The load_inline build cache: keys, and our own precompiled torch/extension.h."""

from __future__ import annotations

import subprocess
import sysconfig

import pytest

from npu_pool.build_cache import build_key, precompiled_header_dir


def test_build_key_follows_sources_and_flags_only():
    base = {"cpp_sources": "int f();", "functions": ["f"], "extra_cflags": ["-O3"]}
    assert build_key("ext", base) == build_key("ext", dict(base, build_directory="/elsewhere", verbose=True))
    assert build_key("ext", base) != build_key("ext", dict(base, cpp_sources="int g();"))
    assert build_key("ext", base) != build_key("ext", dict(base, extra_cflags=["-O2"]))
    assert build_key("ext", base) != build_key("other", base)


def test_build_key_names_the_host_cpu(monkeypatch):
    import npu_pool.build_cache as build_cache

    base = {"cpp_sources": "int f();", "functions": ["f"], "extra_cflags": ["-O3", "-march=native"]}
    here = build_key("ext", base)
    monkeypatch.setattr(build_cache, "host_target", lambda compiler="g++": "another-cpu")
    assert build_key("ext", base) != here


@pytest.mark.slow  # builds a precompiled torch/extension.h: a minute or more
def test_precompiled_header_is_built_once_per_flag_set_and_used(tmp_path):
    from torch.utils.cpp_extension import get_cxx_compiler, include_paths

    flags = ["-O2"]
    pch_dir = precompiled_header_dir(tmp_path, flags, None)
    assert pch_dir is not None
    assert precompiled_header_dir(tmp_path, flags, None) == pch_dir
    source = tmp_path / "use.cpp"
    # Twice, as load_inline writes it when the candidate includes the header too.
    source.write_text("#include <torch/extension.h>\n#include <torch/extension.h>\nint main() { return 0; }\n")
    cmd = [get_cxx_compiler(), "-fsyntax-only", "-H", "-Winvalid-pch", f"-I{pch_dir}",
           *(arg for p in include_paths() for arg in ("-isystem", p)), "-isystem", sysconfig.get_path("include"),
           "-DTORCH_EXTENSION_NAME=probe", "-DTORCH_API_INCLUDE_EXTENSION_H", "-fPIC", "-std=c++20", *flags, str(source)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"! {pch_dir}/torch/extension.h.gch" in out.stderr  # GCC marks a used precompiled header with "!"


# --- the toolchain in the key (issue 15, point 5) ---------------------------------------------


def _fake_version_compiler(tmp_path, version: str):
    """A real compiler (g++) that names another version: as an upgraded toolchain would."""
    script = tmp_path / "g++-other"
    script.write_text(f'#!/bin/sh\nif [ "$1" = "--version" ]; then echo "{version}"; exit 0; fi\nexec g++ "$@"\n')
    script.chmod(0o755)
    return str(script)


def test_build_key_follows_the_toolchain_identity():
    base = {"cpp_sources": "int f();", "functions": ["f"], "cuda_sources": "__global__ void k() {}"}
    h100 = {"capability": "sm_90", "nvcc": "Build cuda_13.0.r13.0/compiler.36424714_0", "cxx": "g++ 13.2.0"}
    assert build_key("ext", base, h100) == build_key("ext", base, dict(h100))
    assert build_key("ext", base, h100) != build_key("ext", base, dict(h100, capability="sm_80"))
    assert build_key("ext", base, h100) != build_key("ext", base, dict(h100, nvcc="Build cuda_12.4.r12.4/compiler.0"))
    assert build_key("ext", base, h100) != build_key("ext", base, dict(h100, cxx="g++ 14.1.0"))
    ascend = {"soc": "Ascend910B3", "cann": "version=8.0.RC2"}
    assert build_key("ext", base, ascend) != build_key("ext", base, dict(ascend, soc="Ascend910B4"))
    assert build_key("ext", base, ascend) != build_key("ext", base, dict(ascend, cann="version=8.1.0"))


def test_another_compiler_version_gives_another_load_inline_key(tmp_path, monkeypatch):
    from npu_pool.backends.cpu import CpuBackend

    base = {"cpp_sources": "int f();", "functions": ["f"]}
    monkeypatch.setenv("CXX", "g++")
    here = CpuBackend().toolchain_identity()
    assert here["cxx"].startswith("g++") and here["target"]
    monkeypatch.setenv("CXX", _fake_version_compiler(tmp_path, "g++ (Other) 99.1.0"))
    other = CpuBackend().toolchain_identity()
    assert other["cxx"] == "g++ (Other) 99.1.0" and other["target"] == here["target"]
    assert build_key("ext", base, here) != build_key("ext", base, other)


def test_another_compiler_version_builds_its_own_kernel(tmp_path, monkeypatch):
    """The kernel format's cache: the same source, built by a compiler that names another
    version, is another artifact (both real builds)."""
    import torch

    from npu_pool.backends.cpu import CpuBackend
    from npu_pool.tasks.signature import derive_signature

    reference = torch.nn.ReLU()
    x = torch.randn(8, 16)
    signature = derive_signature(reference, ["x"], [x], [reference(x)], [], [])
    source = ('extern "C" void kernel(const float* x, float* out, int64_t x_d0, int64_t x_d1, int64_t out_d0, '
              "int64_t out_d1) { for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = x[i] > 0 ? x[i] : 0; }\n")
    monkeypatch.setenv("CXX", "g++")
    first = CpuBackend().compile_kernel(source, signature, tmp_path, tmp_path / "kernels")
    monkeypatch.setenv("CXX", _fake_version_compiler(tmp_path, "g++ (Other) 99.1.0"))
    second = CpuBackend().compile_kernel(source, signature, tmp_path, tmp_path / "kernels")
    assert first != second and first.exists() and second.exists()


# --- a dead build's lock (torch's FileBaton) and the build claim ------------------------------

_HOLDER = r"""
import sys
from pathlib import Path
from npu_pool.build_cache import build_claim
build_dir = Path(sys.argv[1])
with build_claim(build_dir):
    build_dir.mkdir(parents=True, exist_ok=True)
    (build_dir / "lock").touch()  # torch's baton, as _jit_compile creates it
    (build_dir / "main.o").write_bytes(b"partial")
    print("building", flush=True)
    sys.stdin.readline()  # the test says when this build ends
    (build_dir / "ext.so").write_bytes(b"built")
    (build_dir / "lock").unlink()
"""


def _pid_namespace_prefix(kind: str) -> list[str]:
    if kind == "own pid namespace":
        if subprocess.run(["unshare", "-rpf", "--kill-child", "true"], capture_output=True).returncode != 0:
            pytest.skip("no unprivileged user + PID namespaces here")
        return ["unshare", "-rpf", "--kill-child"]  # the build dies with unshare, as a sandbox's does with its init
    return []


def _start_holder(build_dir, prefix: list[str]) -> subprocess.Popen:
    """Another worker's build of `build_dir`, in its own process (and PID namespace, with a prefix)."""
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    holder = subprocess.Popen([*prefix, sys.executable, "-c", _HOLDER, str(build_dir)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert holder.stdout.readline().strip() == "building"
    return holder


def _claim_in_thread(build_dir):
    """Take the claim in a thread, as a second worker would; (thread, event set once held, outcome)."""
    import threading

    from npu_pool.build_cache import build_claim, clear_stale_build

    held, outcome = threading.Event(), {}

    def claim():
        with build_claim(build_dir):
            held.set()
            outcome["cleared"] = clear_stale_build(build_dir)
            outcome["built"] = (build_dir / "ext.so").exists()

    thread = threading.Thread(target=claim, daemon=True)
    thread.start()
    return thread, held, outcome


def test_a_lock_no_build_holds_is_cleared_with_the_partial_outputs(tmp_path):
    from npu_pool.build_cache import build_claim, clear_stale_build

    build_dir = tmp_path / "torch_extensions" / "ext-0123"
    build_dir.mkdir(parents=True)
    for name in ("lock", "build.ninja", "main.cpp", "main.o", "ext_0123.so"):  # killed while linking
        (build_dir / name).write_bytes(b"")
    with build_claim(build_dir):
        assert clear_stale_build(build_dir)
        assert not build_dir.exists()
        assert not clear_stale_build(build_dir)  # nothing left: nothing to clear
    build_dir.mkdir()
    (build_dir / "ext_0123.so").write_bytes(b"built")
    with build_claim(build_dir):
        assert not clear_stale_build(build_dir)  # no lock: a finished build, kept
    assert (build_dir / "ext_0123.so").exists()


@pytest.mark.parametrize("kind", ["same pid namespace", "own pid namespace"])
def test_a_build_in_progress_elsewhere_is_waited_for_not_cleared(tmp_path, kind):
    build_dir = tmp_path / "torch_extensions" / "ext-0123"
    holder = _start_holder(build_dir, _pid_namespace_prefix(kind))
    try:
        thread, held, outcome = _claim_in_thread(build_dir)
        assert not held.wait(0.5), "took the claim while another process was building"
        holder.stdin.write("finish\n")
        holder.stdin.flush()
        thread.join(30)
        assert held.is_set()
        assert outcome == {"cleared": False, "built": True}  # waited, then found the other build finished
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("kind", ["same pid namespace", "own pid namespace"])
def test_a_build_killed_midway_leaves_a_lock_the_next_claim_clears(tmp_path, kind):
    import signal

    build_dir = tmp_path / "torch_extensions" / "ext-0123"
    holder = _start_holder(build_dir, _pid_namespace_prefix(kind))
    holder.send_signal(signal.SIGKILL)  # kill -9 mid-build: torch's lock stays
    holder.wait()
    assert (build_dir / "lock").exists()
    thread, held, outcome = _claim_in_thread(build_dir)
    thread.join(30)
    assert held.is_set()
    assert outcome == {"cleared": True, "built": False}
    assert not build_dir.exists()
