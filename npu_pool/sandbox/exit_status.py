"""How a process that left no result ended, in words a verdict can carry: the sandboxed worker's
(npu_pool.sandbox.runner) and the task loader's child (npu_pool.sandbox.task_loader) alike."""

from __future__ import annotations

import signal


def describe_exit(returncode: int | None) -> tuple[str, str]:
    """(category, words) for how a worker without a result ended."""
    if returncode is None:
        return "unknown", "did not exit"
    if returncode < 0:
        sig = -returncode
        names = {signal.SIGSEGV: ("crash", "crashed with a segmentation fault (SIGSEGV)"),
                 signal.SIGBUS: ("crash", "crashed with a bus error (SIGBUS)"),
                 signal.SIGABRT: ("abort", "aborted (SIGABRT)"),
                 signal.SIGFPE: ("crash", "crashed with an arithmetic exception (SIGFPE)"),
                 signal.SIGILL: ("crash", "crashed on an illegal instruction (SIGILL)"),
                 signal.SIGXCPU: ("cpu_time_limit", "exceeded its CPU-time limit (SIGXCPU)"),
                 signal.SIGALRM: ("timeout", "exceeded its per-call time limit (SIGALRM: harness.call_time_limit_"
                                  "factor times the reference's time, at least call_time_limit_min_s)"),
                 signal.SIGXFSZ: ("file_size_limit", "wrote a file beyond the 2 GiB limit (SIGXFSZ)"),
                 signal.SIGKILL: ("killed", "was killed (SIGKILL: out of memory or the CPU-time hard limit)")}
        return names.get(sig, ("crash", f"was killed by signal {sig}"))
    return "exit", f"exited with code {returncode} without a result"
