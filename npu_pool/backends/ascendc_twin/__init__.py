"""The Ascend C twin (docs/ascendc_twin.md): Ascend C kernels compiled with g++ against our
header-only model of the programming model (`include/`), run over block_dim blocks on the CPU.

- `backend`: `NpuTwinBackend`, the `npu-twin` backend (build, launch, faults, modelled timing).
- `build`: what it compiles (headers, flags, the generated launcher) and how it reads g++.
- `direct`: the direct-launch form (`<<<>>>` and a pybind11 module) rewritten for the twin.
- `timing`: the modelled cost, always labelled as modelled.
- `include/`: the headers (`kernel_operator.h` and the twin's `twin_*.h`).

May import: `npu_pool.backends` (base, ascendc), `npu_pool.config`, `npu_pool.tasks`, `npu_pool.build_cache`,
`npu_pool.paths`, `npu_pool.antihack.lexing`.
"""
