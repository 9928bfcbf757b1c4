"""The project's own hostile suite (issues 45 and 55): what a hostile user tried, kept as tests.

Here, slow and end to end: a stop during the final flush (test_stop_during_flush), hostile
task files through `evokernel tasks check` (test_hostile_task_files). The other cases live
beside the code they guard, each a test that failed before its fix:

| case | test |
|---|---|
| the machine's memory limit below the candidate's | tests/npu_pool/sandbox/test_host_memory.py |
| a task file with module-level code (network, writes, forks) | tests/npu_pool/sandbox/test_task_loader.py, tests/npu_pool/test_cli_commands.py (tasks check) |
| a 5 MB reply | tests/actors/test_llm_client.py (far beyond max_tokens) |
| checksums.json deleted or garbled | tests/memory_actor/test_bank_damage.py |
| glibc's `_Fork`, `_IO_fopen` | tests/npu_pool/antihack/test_antihack_source.py, tests/npu_pool/hostile/glibc_*.cpp (test_hostile) |
| interrupted operators in the last status line | tests/launch/test_run_recorder.py, tests/launch/test_run_summary.py |
| issue 45's cases | tests/npu_pool/sandbox/test_containment.py, test_task_loader.py, tests/launch/test_run_full_disk.py, tests/memory_actor/test_bank_full_disk.py, test_bank_damage.py, tests/launch/test_run_lock.py, tests/actors/test_llm_request_deadline.py, tests/npu_pool/tasks/test_tail_sizes.py |

Run them with `pytest -m slow tests/hostile_use` plus the files above (default suite).
"""
