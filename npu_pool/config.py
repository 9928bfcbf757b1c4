"""Settings of the kernel harness: backend, gates, sandbox limits and profiling."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class NpuTwinConfig(BaseModel):
    """How the npu-twin backend checks an Ascend C kernel: as which build compiles it."""

    model_config = ConfigDict(extra="forbid")

    auto_sync: bool = Field(
        True, description="check the kernel as built with Bisheng's --cce-auto-sync (CANN's default: the compiler "
        "inserts the flags between PIPE_S and V/MTE2/MTE3); false: as built with --cce-auto-sync=off, as many "
        "operator projects are, where a scalar access needs its own flag. The export's CMake carries it")


class HarnessConfig(BaseModel):
    """How candidates are compiled, checked and timed."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["auto", "cpu", "cuda", "npu", "npu-twin"] = Field(
        "auto", description="auto picks npu, then cuda, then cpu; npu-twin (Ascend C on the CPU twin) only by name")
    sizes: Literal["fit", "original"] = Field("fit", description="shrink task sizes to the device budget, or not")
    correctness_trials: int = Field(5, ge=1)
    atol: float | None = Field(None, description="absolute tolerance; default by dtype (1e-4 float32)")
    rtol: float | None = Field(None, description="relative tolerance; default by dtype")
    compile_timeout_s: float = Field(300.0, gt=0)
    run_timeout_s: float = Field(120.0, gt=0, description="wall clock for one sandboxed evaluation")
    call_time_limit_factor: float | None = Field(
        1000.0, ge=1, description="one candidate call in a correctness trial may take this many times the slowest "
        "reference call (a hung kernel is stopped in seconds, not at run_timeout_s); None: no per-call limit"
    )
    call_time_limit_min_s: float = Field(10.0, gt=0, description="the per-call limit is never shorter than this")
    memory_limit_mb: int = Field(8192, ge=256, description="memory a candidate may write on top of the warm worker's own (RLIMIT_DATA)")
    cpu_time_limit_s: int = Field(600, ge=1)
    process_limit: int = Field(
        1024, ge=16, description="tasks (processes and threads) a candidate's whole process tree may hold: a "
        "cgroup's pids.max where one can be made, else a watchdog (npu_pool.sandbox.tree_limits); also RLIMIT_NPROC")
    warmup_trials: int = Field(5, ge=0)
    timed_trials: int = Field(50, ge=3)
    speedup_bound: float = Field(10.0, gt=1, description="speedups above this are flagged for review")
    peak_margin: float = Field(
        1.5, gt=0, description="a timing implying more than this many times the measured peak bandwidth or FLOP "
        "rate re-runs the correctness check after the timed calls (a mismatch: infeasible, changed_under_timing)"
    )
    build_cache_dir: str | None = Field(None, description="default: ~/.cache/evokernel/build")
    seed: int = Field(0, description="base seed of correctness inputs and weights")
    perturbed_trial: bool = Field(True, description="one extra trial on signed, scaled normal inputs")
    second_size_trials: int = Field(
        2, ge=0, description="trials at the task's second, awkward sizes (npu_pool.tasks.tail_sizes: primes near half of "
        "each size constant, to expose tails) after the trials at the task size; 0: the task size only")
    profile_input_sets: int = Field(3, ge=1, description="input sets the timed trials rotate through")
    compile_baseline: bool = Field(True, description="also time the reference under torch.compile (cached per task)")
    use_pch: bool = Field(True, description="precompiled torch headers for load_inline candidates")
    network_isolation: Literal["auto", "off"] = Field("auto", description="auto: a new network namespace where the platform allows")
    confinement: Literal["require", "warn"] = Field(
        "require", description="where the platform cannot confine a candidate's file writes (Landlock) or its "
        "processes (PID namespace or subreaper): require refuses to run, warn runs with a loud warning")
    fit_max_bytes: int = Field(64 * 2**20, ge=2**16, description="fitted sizes: tensor bytes (inputs, parameters, outputs)")
    fit_max_gflop: float = Field(2.0, gt=0, description="fitted sizes: GFLOP of one reference call")
    fit_min_dim: int = Field(8, ge=1, description="fitted sizes never shrink a size constant below this")
    task_load_timeout_s: float = Field(120.0, gt=0, description="loading one task file (its top-level code, "
                                       "size fitting, probes) in its child process may take this long")
    task_load_memory_mb: int = Field(4096, ge=256, description="memory loading one task file may write in its child "
                                     "process (RLIMIT_DATA on top of torch)")
    device_recover_s: float = Field(900.0, gt=0, description="Ray pools: how long a lost device actor may take to "
                                    "come back before its device leaves the pool")
    npu_twin: NpuTwinConfig = Field(default_factory=NpuTwinConfig, description="the npu-twin backend's checks")
