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
