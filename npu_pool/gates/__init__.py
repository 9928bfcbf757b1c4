"""The gates a built candidate passes inside the sandboxed worker, and the profiler after them.

- `correctness`: fresh seeded trials against the reference, outputs compared on one device.
- `second_size_check`: the same check at the task's second, awkward sizes.
- `timed_check`: what the profiler's timed calls return must still match the reference.
- `profiler`, `roofline`: latency against eager and torch.compile; achieved bandwidth and
  throughput against the device's measured peaks.
- `infra_faults`: errors that are the sandbox's or the machine's doing, never cached.

The anti-hack gate is `npu_pool.antihack` (run before the sandbox); the entry that runs all of
them is `npu_pool.verifier`.

May import: npu_pool's top-level messages, settings and caches, `backends`, `tasks`. Never
imports `sandbox` (which runs the gates) or `verifier`.
"""
