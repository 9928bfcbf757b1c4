"""What checking raw pointers costs the npu-twin backend (issue 53, point 4): CPU seconds per
launch of two 4_ReLU kernels, each built with and without the raw-pointer instrumentation
(build.RAW_GM_FLAGS, emptied for the 'off' build; the guard bands are the same in both).

    python bench/twin_raw_pointers.py [--launches N] [--max-bytes B]   # one JSON line last

relu_good moves everything through DataCopyPad (the instrumentation's cost on API code: every
UB load and store of the twin's vector loops is a callback that returns at once); relu_raw
reads and writes every element through raw __gm__ pointers (each access checked, in runs).
Process CPU time over the launches (medians of --repeats), in this process, not the sandbox.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import npu_pool.backends.ascendc_twin.backend as twin_backend  # noqa: E402
from npu_pool.backends import get_backend  # noqa: E402
from npu_pool.tasks.spec import load_task  # noqa: E402

TASK = ROOT / "suites" / "cpu" / "level1" / "4_ReLU.py"
KERNELS = ROOT / "tests" / "npu_pool" / "candidates" / "npu_twin"


def per_launch_cpu_ms(module: torch.nn.Module, x: torch.Tensor, launches: int) -> float:
    module(x)  # warm: the library's first launch
    started = time.process_time()
    for _ in range(launches):
        module(x)
    return (time.process_time() - started) / launches * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-bytes", type=int, default=2**22, help="the task's tensor size (bytes)")
    args = parser.parse_args()
    task = load_task(TASK, max_bytes=args.max_bytes)
    signature = task.kernel_signature
    backend = get_backend("npu-twin")
    x = torch.randn(task.inputs[0].shape)
    flags = twin_backend.RAW_GM_FLAGS
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as cache:
        for mode, mode_flags in (("off", ()), ("on", flags)):
            twin_backend.RAW_GM_FLAGS = mode_flags
            for name in ("relu_good", "relu_raw"):
                artifact = backend.compile_kernel((KERNELS / f"{name}.cpp").read_text(), signature,
                                                  Path(tempfile.mkdtemp(dir=cache)), Path(cache))
                module = backend.wrap_kernel(artifact, signature, torch.nn.ReLU())
                samples = [per_launch_cpu_ms(module, x, args.launches) for _ in range(args.repeats)]
                rows.setdefault(name, {})[f"{mode}_cpu_ms"] = statistics.median(samples)
                print(f"{name} instrumentation {mode}: {rows[name][f'{mode}_cpu_ms']:.2f} CPU ms a launch", flush=True)
    twin_backend.RAW_GM_FLAGS = flags
    for row in rows.values():
        row["ratio"] = row["on_cpu_ms"] / row["off_cpu_ms"]
    print(json.dumps({"bench": "twin_raw_pointers", "shape": list(x.shape), "launches": args.launches,
                      "repeats": args.repeats, "load1": os.getloadavg()[0], "kernels": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
