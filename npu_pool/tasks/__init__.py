"""What a task is: a KernelBench file loaded, its sizes fitted, its kernel signature derived.

- `spec`: `TaskSpec` and `load_task` (in this process; user files go through
  `npu_pool.sandbox.task_loader`, which runs `load_task` in a bounded, confined child).
- `sizing`: the size constants read from the AST and shrunk to a memory and time budget.
- `tail_sizes`: the second, awkward sizes every correctness check also runs.
- `signature`: the kernel-source format's C entry point derived from the reference.

May import: nothing of ours (the bottom of npu_pool).
"""
