"""The sandbox: untrusted code (a candidate, a user's task file) runs only in a confined child.

- `runner`: `run_worker(request)` runs the worker for one candidate in a fresh child of the
  warm server, within limits, and always returns (docs/harness.md).
- `warm_worker`: the warm server (`python -m npu_pool.sandbox.warm_worker`), torch imported once,
  a fresh forked child per candidate; `worker`: what that child runs (build, then the gates).
- `task_loader`: task files loaded in a bounded, confined child (`load_task_for`).
- `confinement` (Landlock, PID and network namespaces), `read_allow` (what a child may read),
  `tree_limits` (memory and process bounds of a whole tree), `leftovers` (folders whose owner
  died), `exit_status` (how a child that left no result ended).

May import: npu_pool's top-level messages, settings and caches, `gates`, `backends`, `tasks`.
Never imports `verifier` or `pools` (they sit above it).
"""
