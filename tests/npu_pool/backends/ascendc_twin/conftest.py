"""Session fixtures of the Ascend C twin's tests: four shared libraries (correct kernels,
wrong kernels, kernels in the style of the published samples, the npu bundle's templates) built by concurrent g++ runs into ~/.cache/evokernel/twin-tests,
keyed by the hash of their source, the twin's headers and the compiler; and the npu-twin backend's
candidate kernels (tests/npu_pool/candidates/npu_twin/) built once per session through the backend
itself into the persistent test build cache (`built`, with `relu_task` and `backend`)."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from npu_pool.backends import get_backend
from npu_pool.backends.ascendc_twin.backend import NpuTwinBackend
from npu_pool.backends.base import KernelBuildError
from npu_pool.tasks.spec import load_task
from tests.npu_pool.backends.ascendc_twin import twin_support as ts
from tests.npu_pool.backends.ascendc_twin.twin_support import CANDIDATE_KERNELS as KERNELS
from tests.npu_pool.backends.ascendc_twin.twin_support import kernel_cache
from tests.npu_pool.harness_support import SMALL_BYTES, SUITE

# two variants of relu_good built beside the candidates (compile-error tests)
UNDECLARED = (KERNELS / "relu_good.cpp").read_text().replace(
    "Relu(yLocal, xIn,", "Frobnicate(yLocal, xIn,")
OTHER_SIGNATURE = (KERNELS / "relu_good.cpp").read_text().replace("(GM_ADDR x, GM_ADDR out,", "(GM_ADDR x, GM_ADDR y, GM_ADDR out,")
# relu_ub_scalar with scalar math calls that change nothing (each charged on the scalar unit)
UB_SCALAR_MATH = (KERNELS / "relu_ub_scalar.cpp").read_text().replace(
    "e > 0.0f ? e : 0.0f);", "(e > 0.0f ? e : 0.0f) + 0.0f * std::exp(-std::fabs(e)) + 0.0f * sqrtf(std::fabs(e)));")


@pytest.fixture(scope="session")
def twin_build(request):
    if shutil.which("g++") is None:
        pytest.skip("the Ascend C twin needs g++")
    cache = ts.BUILD_CACHE
    templates = ts.template_cases()
    groups = {
        "fidelity": [ts.unit_from_file(p) for p in ts.kernel_files(ts.KERNELS)],
        "faults": [ts.unit_from_file(p) for p in ts.kernel_files(ts.KERNELS / "faults")],
        "samples": [ts.unit_from_file(p) for p in ts.kernel_files(ts.KERNELS / "samples")],
        "templates": [case.unit for case in templates],
    }
    # the templates run the suite's full-size tasks (millions of scalar accesses): optimised
    started = {name: ts.start_build(units, cache, "-O1" if name == "templates" else "-O0")
               for name, units in groups.items() if units}
    libraries = {name: ts.TwinLibrary(ts.finish_build(library, process))
                 for name, (library, process, _) in started.items()}
    return libraries, templates


@pytest.fixture(scope="session")
def fidelity(twin_build):
    return twin_build[0]["fidelity"]


@pytest.fixture(scope="session")
def samples(twin_build):
    return twin_build[0]["samples"]


@pytest.fixture(scope="session")
def faults(twin_build):
    return twin_build[0]["faults"]


@pytest.fixture(scope="session")
def templates(twin_build):
    return twin_build[0].get("templates"), twin_build[1]


# --- the npu-twin backend's candidate kernels (tests/npu_pool/candidates/npu_twin/) ---------------

@pytest.fixture(scope="session")
def relu_task():
    return load_task(SUITE / "level1" / "4_ReLU.py", max_bytes=SMALL_BYTES // 16)


@pytest.fixture(scope="session")
def backend() -> NpuTwinBackend:
    return get_backend("npu-twin")


@pytest.fixture(scope="session")
def built(relu_task, backend, tmp_path_factory):
    """name -> artifact path or KernelBuildError, for every kernel of candidates/npu_twin/."""
    cache = kernel_cache()
    sources = {p.stem: p.read_text() for p in sorted(KERNELS.glob("*.cpp"))} | {
        "relu_undeclared": UNDECLARED, "relu_other_signature": OTHER_SIGNATURE,
        "relu_ub_scalar_math": UB_SCALAR_MATH}

    def build(name: str):
        work = tmp_path_factory.mktemp(name)
        try:
            return backend.compile_kernel(sources[name], relu_task.kernel_signature, work, cache)
        except KernelBuildError as exc:
            return exc

    # relu_good first: it builds the signature's launcher object, which the others then link
    # (built side by side, each would compile its own); then two at a time, one per core.
    first = {"relu_good": build("relu_good")}
    rest = [name for name in sources if name not in first]
    with ThreadPoolExecutor(min(2, os.cpu_count() or 1)) as pool:
        return first | dict(zip(rest, pool.map(build, rest), strict=True))
