"""Session fixtures of the Ascend C twin's tests: four shared libraries (correct kernels,
wrong kernels, kernels in the style of the published samples, the npu bundle's templates) built by concurrent g++ runs into ~/.cache/evokernel/twin-tests,
keyed by the hash of their source, the twin's headers and the compiler."""

from __future__ import annotations

import shutil

import pytest

from tests.npu_pool.backends.ascendc_twin import twin_support as ts


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
