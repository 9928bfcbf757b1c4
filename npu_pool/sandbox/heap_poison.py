"""Fresh and freed heap memory poisoned in the candidate's process (issue 63, point 5).

A kernel that reads heap memory it never wrote (a scratch buffer accumulated into without being
zeroed, `new float[n]` read before it is set) passes wherever that memory happens to be zero: a
large allocation is fresh pages from the kernel, zero-filled, so the bug shows only on another
machine, another size or another allocator. glibc can fill every block `malloc` hands out with one
byte and every block `free` takes back with its complement (`M_PERTURB`, what the `MALLOC_PERTURB_`
variable sets). The variable is read when malloc initialises, and the runner is a fork of the
warm server, whose malloc initialised long before: so the runner calls `mallopt(M_PERTURB, ...)`
itself, before any candidate code runs. `calloc`, `std::vector<T>(n)` and torch's `zeros` still
zero what they promise to.

The byte: fresh blocks are filled with 0x7f (a float of those bytes is 3.4e38, a double 1.4e306,
a half NaN, an int 2139062143), so an uninitialised accumulator or maximum is wildly wrong at
the correctness gate; freed blocks get 0x80. Switched off again (`poison_heap(False)`) before the
profiler's timed calls: filling every allocation costs a pass over it, which would be timed in
both the candidate and the eager reference.
"""

from __future__ import annotations

import ctypes

M_PERTURB = -6  # glibc's malloc.h
PERTURB_BYTE = 0x80  # malloc fills with PERTURB_BYTE ^ 0xff (0x7f), free with PERTURB_BYTE


def poison_heap(on: bool = True) -> bool:
    """Turn the poisoning of fresh and freed heap on (or off) in this process; False where the C
    library has no mallopt (musl) or refuses it."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt(M_PERTURB, PERTURB_BYTE if on else 0) == 1
