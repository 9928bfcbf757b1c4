"""The kernel line of every raw global-memory access, found before the sandbox's seal.

A raw pointer access that breaks a GlobalTensor rule is named by its kernel.cpp line
(include/twin_raw_gm.h, `raw_site`). The line comes from the library's line tables through
addr2line; but a candidate runs sealed (issue 63: no program may be executed after the seal), so
the twin cannot start addr2line when a fault happens. Instead the build, still before the seal,
resolves every call the instrumentation placed (`__asan_{load,store}*_noabort`) once, and writes
`<library>.sites`: one line per call, the return address's offset in the library and the
kernel.cpp line. The runtime reads that table when the library is loaded and looks a faulting
access's return address up in it; where there is no table, it asks addr2line as before (a twin
library loaded outside the sandbox).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

# "  1234:	call   5678 <__asan_store4_noabort@plt>" (x86_64), "  1234:	bl	5678 <...>" (aarch64)
_INSTRUCTION = re.compile(r"^\s*([0-9a-f]+):\s+(.*)$")
_INSTRUMENTATION_CALL = re.compile(r"\b(?:call|callq|bl)\s+[0-9a-f]+\s+<__asan_(?:load|store)\w*_noabort")
_KERNEL_LINE = re.compile(r"(?:^|/)kernel\.cpp:(\d+)")
SITES_TIMEOUT_S = 120


def call_returns(disassembly: str) -> list[int]:
    """The return addresses of the instrumentation's calls: each such call's next instruction."""
    returns: list[int] = []
    pending = False
    for line in disassembly.splitlines():
        match = _INSTRUCTION.match(line)
        if match is None:
            continue
        if pending:
            returns.append(int(match.group(1), 16))
        pending = bool(_INSTRUMENTATION_CALL.search(match.group(2)))
    return returns


def kernel_lines(addr2line_output: str) -> dict[int, int]:
    """address -> kernel.cpp line, from `addr2line -a -i` output: each address's inline chain,
    innermost first; the first kernel.cpp frame with a line is the kernel's."""
    found: dict[int, int] = {}
    address: int | None = None
    for line in addr2line_output.splitlines():
        line = line.strip()
        if line.startswith("0x"):
            address = int(line, 16)
            continue
        match = _KERNEL_LINE.search(line.split(" (discriminator")[0])
        if address is not None and address not in found and match and int(match.group(1)) > 0:
            found[address] = int(match.group(1))
    return found


def write_sites(library: Path, sites: Path) -> int:
    """Resolve every instrumented call of `library` to its kernel line and write `sites`
    (atomically); the number of sites written. A tool that is missing or fails leaves no table
    (the runtime then falls back to addr2line at the fault, or to the last API call's line)."""
    try:
        disassembly = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(library)], capture_output=True,
                                     text=True, timeout=SITES_TIMEOUT_S, check=True).stdout
        returns = call_returns(disassembly)
        # addr2line is asked for the call instruction (return address - 1), as a debugger does
        lines: dict[int, int] = {}
        for start in range(0, len(returns), 2000):  # command lines of bounded length
            batch = returns[start:start + 2000]
            output = subprocess.run(["addr2line", "-a", "-i", "-e", str(library), *(hex(r - 1) for r in batch)],
                                    capture_output=True, text=True, timeout=SITES_TIMEOUT_S, check=True).stdout
            lines.update({address + 1: number for address, number in kernel_lines(output).items()})
    except (OSError, subprocess.SubprocessError):
        return 0
    partial = sites.with_name(f".{sites.name}-{os.getpid()}")
    partial.write_text("".join(f"{address:x} {number}\n" for address, number in sorted(lines.items())))
    os.replace(partial, sites)
    return len(lines)
