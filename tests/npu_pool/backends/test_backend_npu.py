"""The npu backend without an NPU: what it says when torch_npu or CANN is missing, and its
real code above the torch.npu boundary (device selection, events, the Ascend C source
format, the tiling ABI and the launch wrapper), with only torch.npu/torch_npu faked."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

from npu_pool.antihack import check_kernel_source
from npu_pool.backends import backend_status, get_backend
from npu_pool.backends import npu as npu_backend
from npu_pool.backends.base import KernelBuildError
from npu_pool.tasks.signature import derive_signature

ROOT = Path(__file__).resolve().parents[3]


class LeakyReLU(torch.nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        return torch.nn.functional.leaky_relu(x, self.negative_slope)


@pytest.fixture(scope="module")
def leaky_signature():
    reference = LeakyReLU(0.05)
    x = torch.randn(6, 40)
    return derive_signature(reference, ["x"], [x], [reference(x)], ["negative_slope"], [0.05])


# --- the torch.npu boundary, faked ---------------------------------------------------------


class FakeEvent:
    log: list[tuple] = []
    clock = 0.0  # each record() happens 2.5 ms after the previous one

    def __init__(self, enable_timing: bool = False):
        assert enable_timing
        self.when = 0.0

    def record(self, stream=None):
        FakeEvent.log.append(("record", stream.name))
        self.when = FakeEvent.clock
        FakeEvent.clock += 2.5

    def elapsed_time(self, end):
        return end.when - self.when

    def synchronize(self):
        FakeEvent.log.append(("wait", "event"))


class FakeStream:
    def __init__(self, name: str):
        self.name = name
        self.npu_stream = 0xABC
        self.synchronized = 0

    def synchronize(self):
        self.synchronized += 1


def _fake_npu(devices: int = 1) -> types.SimpleNamespace:
    calls: list[tuple] = []
    stream = FakeStream("current")
    props = types.SimpleNamespace(name="Ascend910B3", total_memory=64 << 30, vector_core_num=40, cube_core_num=20)
    return types.SimpleNamespace(
        calls=calls,
        stream=stream,
        is_available=lambda: devices > 0,
        device_count=lambda: devices,
        set_device=lambda d: calls.append(("set_device", d)),
        synchronize=lambda d=None: calls.append(("synchronize", d)),
        current_stream=lambda d=None: stream,
        Event=FakeEvent,
        get_device_properties=lambda i: props,
        get_device_name=lambda i=0: "Ascend 910B3",
        memory_allocated=lambda d=None: 10,
        max_memory_allocated=lambda d=None: 30,
        memory_reserved=lambda d=None: 64,
        mem_get_info=lambda d=None: (100, 200),
    )


@pytest.fixture
def fake_cann(tmp_path, monkeypatch):
    home = tmp_path / "cann"
    (home / "lib64").mkdir(parents=True)
    (home / "lib64" / "libascendcl.so").write_bytes(b"")
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    return home


@pytest.fixture
def fake_torch_npu(monkeypatch):
    def install(devices: int = 1) -> types.SimpleNamespace:
        fake = _fake_npu(devices)
        monkeypatch.setitem(sys.modules, "torch_npu", types.ModuleType("torch_npu"))
        monkeypatch.setattr(torch, "npu", fake, raising=False)
        FakeEvent.log = []
        FakeEvent.clock = 0.0
        return fake

    return install


# --- availability --------------------------------------------------------------------------


def test_module_imports_neither_torch_nor_torch_npu():
    code = "import sys, npu_pool.backends.npu; assert 'torch' not in sys.modules and 'torch_npu' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)


def test_without_torch_npu_the_backend_says_so():
    if npu_backend.torch_npu_installed():
        pytest.skip("torch_npu is installed here")
    available, why = backend_status("npu")
    assert not available and "torch_npu is not installed" in why


def test_without_cann_the_backend_names_the_toolkit(fake_torch_npu, monkeypatch, tmp_path):
    fake_torch_npu()
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    monkeypatch.setattr(npu_backend, "DEFAULT_CANN_HOMES", (str(tmp_path / "nowhere"),))
    available, why = npu_backend.NpuBackend().is_available()
    assert not available and "CANN toolkit not found" in why and "ASCEND_HOME_PATH" in why


def test_broken_torch_npu_import_is_reported(monkeypatch, fake_cann):
    monkeypatch.setitem(sys.modules, "torch_npu", None)  # `import torch_npu` raises ImportError
    available, why = npu_backend.NpuBackend().is_available()
    assert not available and "torch_npu is installed but does not import" in why


def test_no_visible_device_is_reported(fake_torch_npu, fake_cann, monkeypatch):
    fake_torch_npu(devices=0)
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "3")
    available, why = npu_backend.NpuBackend().is_available()
    assert not available and "ASCEND_RT_VISIBLE_DEVICES=3" in why
    with pytest.raises(RuntimeError, match="no Ascend NPU visible"):
        npu_backend.NpuBackend().synchronize()


def test_torch_npu_failing_for_want_of_cann_names_the_fixes(monkeypatch, fake_cann):
    def failing_import():
        raise ImportError("libascendcl.so: cannot open shared object file (imported by torch_npu)")

    monkeypatch.setitem(sys.modules, "torch_npu", types.ModuleType("torch_npu"))
    monkeypatch.setattr(npu_backend, "_import_torch_npu", failing_import)
    available, why = npu_backend.NpuBackend().is_available()
    assert not available and "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in why


def test_autoload_failure_of_import_torch_gets_a_clear_message():
    exc = ImportError("libascendcl.so: cannot open shared object file (while importing torch_npu)")
    message = npu_backend.explain_torch_import_failure(exc)
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in message and "ASCEND_HOME_PATH" in message
    assert npu_backend.explain_torch_import_failure(ImportError("No module named 'numpy'")) is None


# --- the device API above the boundary ----------------------------------------------------------


def test_selects_its_device_and_times_with_npu_events(fake_torch_npu, fake_cann):
    fake = fake_torch_npu()
    backend = npu_backend.NpuBackend(index=0)
    assert backend.is_available() == (True, "")
    assert backend.device == "npu:0"
    backend.synchronize()
    assert fake.calls[:2] == [("set_device", "npu:0"), ("synchronize", "npu:0")]
    timer = backend.timer()
    timer.start()
    timer.stop()
    assert timer.elapsed_ms() == 2.5
    # the device drained before the start event; after the end event, the host waits for it, then for the device
    assert FakeEvent.log == [("record", "current"), ("record", "current"), ("wait", "event")]
    assert fake.calls[-3:] == [("synchronize", "npu:0")] * 3  # before start, after stop, before reading
    assert timer.lingering_ms() >= 0.0
    assert backend.memory_stats() == {"allocated": 10, "peak": 30, "reserved": 64, "free": 100, "total": 200}
    assert backend.block_dim() == 40
    assert backend.soc_version() == "Ascend910B3"


def test_timer_survives_a_patched_event_class(fake_torch_npu, fake_cann, monkeypatch):
    fake = fake_torch_npu()
    backend = npu_backend.NpuBackend()
    backend.synchronize()  # the backend is set up before any candidate code runs
    monkeypatch.setattr(FakeEvent, "elapsed_time", lambda self, end: 0.0)  # a hostile candidate
    monkeypatch.setattr(fake, "synchronize", lambda d=None: None)
    timer = backend.timer()
    timer.start()
    timer.stop()
    assert timer.elapsed_ms() == 2.5


# --- the Ascend C kernel-source format ------------------------------------------------------------


def test_rendered_entry_point_and_tiling(leaky_signature):
    text = npu_backend.render_ascendc_signature(leaky_signature)
    assert 'extern "C" __global__ __aicore__ void kernel(' in text
    for line in ("GM_ADDR x,", "GM_ADDR out,", "GM_ADDR workspace,", "GM_ADDR tiling)"):
        assert line in text
    # the definition to fill: the parameter list closes on its last parameter's line, the body follows
    assert text.endswith("GM_ADDR tiling)     // KernelTiling in global memory\n{\n    // the kernel's body\n}")
    assert "int64_t x_d0;" in text and "float negative_slope;" in text and "uint32_t block_dim;" in text
    # int64 fields come first: no interior padding
    struct = npu_backend.render_tiling_struct(leaky_signature)
    assert struct.index("float negative_slope") > struct.index("int64_t out_d1")


def test_translation_unit_and_a_good_ascend_kernel_pass_the_static_gate(leaky_signature):
    kernel = """
    extern "C" __global__ __aicore__ void kernel(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling)
    {
        KernelTiling t;
        CopyTiling(&t, tiling);
        int64_t n = t.x_d0 * t.x_d1;
        int64_t per = (n + GetBlockNum() - 1) / GetBlockNum();
        AscendC::GlobalTensor<float> xg, og;
        xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * per, per);
        og.SetGlobalBuffer((__gm__ float*)out + GetBlockIdx() * per, per);
        for (int64_t i = 0; i < per && GetBlockIdx() * per + i < n; ++i) {
            float v = xg.GetValue(i);
            og.SetValue(i, v >= 0 ? v : v * t.negative_slope);
        }
    }
    """
    unit = npu_backend.kernel_translation_unit(kernel, leaky_signature)
    assert unit.startswith('#include "kernel_operator.h"') and "struct KernelTiling" in unit and '#line 1 "kernel.cpp"' in unit
    assert check_kernel_source(kernel, "ascendc") == []


def test_compile_without_cann_is_a_build_error(leaky_signature, tmp_path, monkeypatch):
    monkeypatch.delenv("ASCEND_HOME_PATH", raising=False)
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    monkeypatch.setattr(npu_backend, "DEFAULT_CANN_HOMES", (str(tmp_path / "nowhere"),))
    with pytest.raises(KernelBuildError, match="CANN toolkit not found"):
        npu_backend.NpuBackend().compile_kernel("", leaky_signature, tmp_path, tmp_path / "cache")


def test_cmake_project_uses_ascendc_library():
    text = npu_backend.CMAKE_TEMPLATE.format(soc="Ascend910B3", cann="/opt/cann")
    assert 'set(SOC_VERSION "Ascend910B3"' in text and "ascendc_library(evokernel_kernel SHARED kernel.cpp)" in text
    assert "include(${ASCENDC_CMAKE_DIR}/ascendc.cmake)" in text


# Stands in for the library `ascendc_library` builds: the same aclrtlaunch_kernel ABI, with the
# kernel run on the host, so the wrapper's packing of pointers, tiling and workspace is real.
_LAUNCHER = r"""
#include <cstdint>
{struct}
extern "C" uint32_t aclrtlaunch_kernel(uint32_t block_dim, void* stream, void* x, void* out,
                                       void* workspace, void* tiling) {{
    const KernelTiling* t = static_cast<const KernelTiling*>(tiling);
    if (t->block_dim != block_dim || stream != reinterpret_cast<void*>(0xABC) || workspace == nullptr) return 7;
    const float* xs = static_cast<const float*>(x);
    float* os = static_cast<float*>(out);
    for (int64_t i = 0; i < t->x_d0 * t->x_d1; ++i) os[i] = xs[i] >= 0 ? xs[i] : xs[i] * t->negative_slope;
    return (t->out_d0 == t->x_d0 && t->out_d1 == t->x_d1) ? 0 : 9;
}}
"""


def test_launch_wrapper_packs_tensors_tiling_and_workspace(leaky_signature, tmp_path, fake_torch_npu):
    fake = fake_torch_npu()
    source = tmp_path / "launcher.cpp"
    source.write_text(_LAUNCHER.format(struct=npu_backend.render_tiling_struct(leaky_signature)))
    library = tmp_path / "libevokernel_kernel.so"
    subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-o", str(library), str(source)], check=True, timeout=120)
    launch = npu_backend.load_launcher(library, leaky_signature)
    assert ctypes.sizeof(npu_backend.tiling_type(leaky_signature)) % 8 == 0
    reference = LeakyReLU(0.05)
    module = npu_backend.make_ascend_module(launch, leaky_signature, reference, "cpu", block_dim=4,
                                            stream_of=fake.current_stream, flush_queue=True)
    x = torch.randn(6, 40)
    torch.testing.assert_close(module(x), reference(x))
    assert fake.stream.synchronized == 1  # queued torch_npu work drained before the launch

    wrong = npu_backend.make_ascend_module(launch, leaky_signature, reference, "cpu", block_dim=4,
                                           stream_of=lambda d: types.SimpleNamespace(npu_stream=1, synchronize=lambda: None),
                                           flush_queue=False)
    with pytest.raises(RuntimeError, match="aclrtlaunch_kernel returned error 7"):
        wrong(x)


def test_registry_builds_the_npu_backend_lazily():
    backend = get_backend("npu")
    assert backend.name == "npu" and backend.kernel_language == "ascendc"
    assert set(backend.compile_routes) == {"modelnew", "kernel"}
