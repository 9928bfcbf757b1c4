"""Kernel evaluation: one entry, `verifier.verify`/`evaluate`, and the rooms it draws on.

Top level: the entry and what every room shares.
- `verifier`: the one way a candidate is judged (anti-hack gate here, then the sandbox).
- `pools`, `devices`, `node_gate`: device-pinned verifier and profiler actors, one slot per device.
- `verdict` (Candidate, Verdict, ProfileReport), `protocol` (what the verifier and the sandboxed
  worker exchange), `redaction` (verdict text bounded and scrubbed): the messages.
- `config`, `paths`, `build_cache`, `harness_cache`: settings, cache folders and caches.

Rooms, each importing only the rooms listed after it (and the top-level modules above that are
messages, settings or caches):
- `sandbox/`: everything that runs untrusted code (a candidate, a task file) in a confined child.
- `gates/`: what the sandboxed worker runs on a built candidate: correctness, timing, profiling.
- `antihack/`: the static gate, run before anything is compiled.
- `backends/`: cpu, cuda, npu and the Ascend C twin (`backends/ascendc_twin/`), behind one protocol.
- `tasks/`: what a task is: its spec, fitted sizes, second sizes and kernel signature.

May import: nothing of ours outside npu_pool (bottom layer beside memory_actor). Never imports
launch or actors.
"""
