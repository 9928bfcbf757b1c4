"""A seccomp filter for the candidate's process: the second line behind Landlock and the cgroups.

Landlock decides which files a candidate may read, write and execute; it does not see a
connect() to a pathname unix socket, a raw syscall made from inline machine code, or a
program run through an internal glibc name the static gate missed. This filter refuses, with
EPERM, the system calls a kernel never needs and an escape always does, whatever the code
that makes them (Python, C, raw `syscall` bytes):

- always, from the runner's start: unix sockets (`socket(AF_UNIX)`, and `socketpair` of any
  kind but a connected stream pair, since a datagram pair can be re-connected to a path), and
  io_uring (its operations run in the kernel, past this filter); other processes' memory and
  descriptors (`ptrace`, `process_vm_*`, `pidfd_getfd`); namespaces and mounts (`unshare`,
  `setns`, `mount` and the new mount API, `pivot_root`, `chroot`); kernel modules, kexec, bpf,
  keyrings, `userfaultfd`, `open_by_handle_at`;
- from the seal on (the build is over: candidate code runs next): `execve` and `execveat`.
  The build itself runs the compiler (g++, ninja through /bin/sh), so execution cannot be
  refused before it; Landlock's execute right is withheld at the same point.

Why a deny-list, not an allow-list: the runner is CPython with torch, OpenMP and the
toolkits' runtimes (CUDA, CANN), and before the seal also g++, as, ld and ninja. What they
call changes with every glibc, driver and torch release (clone3, rseq, membarrier,
sched_getaffinity, futex_waitv, statx, getrandom, memfd for the JIT, ...), and a call an
allow-list forgot kills a correct kernel on a user's machine with no message it can act on.
The calls above are the ones an escape needs and a kernel never does; Landlock (files,
TCP, signals, ptrace), the network namespace and the cgroups hold the rest.

Foreign system-call ABIs (i386 `int 0x80` on x86_64, x32) are refused whole: their numbers
differ and would slip past the native table. Linux-only; the filter is written in classic BPF
through prctl, with no library.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import socket
import struct

_libc = ctypes.CDLL(None, use_errno=True)

_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_X32_BIT = 0x40000000
# classic BPF opcodes
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_ALU_AND_K = 0x54

# seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (little-endian halves)
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24

_ARCHES = {  # machine: (AUDIT_ARCH_*, system call numbers by name)
    "x86_64": (0xC000003E, {
        "socket": 41, "socketpair": 53, "execve": 59, "ptrace": 101, "pivot_root": 155, "chroot": 161,
        "mount": 165, "umount2": 166, "init_module": 175, "delete_module": 176, "kexec_load": 246,
        "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272, "open_by_handle_at": 304,
        "setns": 308, "process_vm_readv": 310, "process_vm_writev": 311, "finit_module": 313,
        "kexec_file_load": 320, "bpf": 321, "execveat": 322, "userfaultfd": 323, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "pidfd_getfd": 438,
        "mount_setattr": 442}),
    "aarch64": (0xC00000B7, {  # the generic table (asm-generic/unistd.h)
        "umount2": 39, "mount": 40, "pivot_root": 41, "chroot": 51, "unshare": 97, "kexec_load": 104,
        "init_module": 105, "delete_module": 106, "ptrace": 117, "socket": 198, "socketpair": 199,
        "add_key": 217, "request_key": 218, "keyctl": 219, "execve": 221, "open_by_handle_at": 265,
        "setns": 268, "process_vm_readv": 270, "process_vm_writev": 271, "finit_module": 273, "bpf": 280,
        "execveat": 281, "userfaultfd": 282, "kexec_file_load": 294, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "pidfd_getfd": 438,
        "mount_setattr": 442}),
}

ALWAYS_DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "unshare", "setns", "mount", "umount2",
    "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr", "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "bpf",
    "add_key", "request_key", "keyctl", "userfaultfd", "open_by_handle_at", "io_uring_setup", "io_uring_enter",
    "io_uring_register")
EXEC_DENIED = ("execve", "execveat")
_SOCK_TYPE_MASK = 0xF  # SOCK_NONBLOCK and SOCK_CLOEXEC live above it


class SeccompUnavailable(OSError):
    """This machine or kernel cannot take the filter."""


def supported() -> bool:
    return platform.system() == "Linux" and platform.machine() in _ARCHES


def build_filter(denied: tuple[str, ...], unix_sockets: bool, machine: str | None = None) -> bytes:
    """The BPF program: refuse `denied` calls with EPERM, and (with `unix_sockets`) unix
    sockets as the module says; everything else passes. Exposed for the tests."""
    machine = machine or platform.machine()
    arch, numbers = _ARCHES[machine]
    code: list[list] = []  # [opcode, k, jump if true, jump if false]; jumps may name a label
    labels: dict[str, int] = {}

    def emit(op: int, k: int, true: int | str = 0, false: int | str = 0) -> None:
        code.append([op, k, true, false])

    emit(_LD_W_ABS, _ARCH)
    emit(_JEQ_K, arch, 0, "deny")  # a foreign ABI (i386's int 0x80 on x86_64): refused whole
    emit(_LD_W_ABS, _NR)
    if machine == "x86_64":
        emit(_JGE_K, _X32_BIT, "deny", 0)  # x32 numbers
    for name in denied:
        emit(_JEQ_K, numbers[name], "deny", 0)
    if unix_sockets:
        emit(_JEQ_K, numbers["socket"], "socket", 0)
        emit(_JEQ_K, numbers["socketpair"], "socketpair", 0)
    emit(_RET_K, _RET_ALLOW)
    if unix_sockets:  # BPF jumps only forward: each block ends in its own allow
        labels["socket"] = len(code)
        emit(_LD_W_ABS, _ARG0)  # the domain
        emit(_JEQ_K, socket.AF_UNIX, "deny", 0)
        emit(_RET_K, _RET_ALLOW)
        labels["socketpair"] = len(code)
        emit(_LD_W_ABS, _ARG0)
        emit(_JEQ_K, socket.AF_UNIX, 0, 3)  # another domain: allow (three ahead)
        emit(_LD_W_ABS, _ARG1)  # the type, without SOCK_NONBLOCK/SOCK_CLOEXEC
        emit(_ALU_AND_K, _SOCK_TYPE_MASK)
        emit(_JEQ_K, socket.SOCK_STREAM, 0, "deny")
        emit(_RET_K, _RET_ALLOW)
    labels["deny"] = len(code)
    emit(_RET_K, _RET_ERRNO | errno.EPERM)
    out = []
    for at, (op, k, true, false) in enumerate(code):
        jumps = [labels[j] - at - 1 if isinstance(j, str) else j for j in (true, false)]
        if not all(0 <= j <= 255 for j in jumps):
            raise ValueError("seccomp filter: a jump out of range")
        out.append(struct.pack("HBBI", op, jumps[0], jumps[1], k & 0xFFFFFFFF))
    return b"".join(out)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(denied: tuple[str, ...], unix_sockets: bool = False) -> None:
    """Apply a filter to this process and everything it starts, for good (filters stack: a
    later one can only refuse more). Raises SeccompUnavailable."""
    if not supported():
        raise SeccompUnavailable(f"no seccomp filter for {platform.system()} {platform.machine()}")
    program = build_filter(denied, unix_sockets)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise SeccompUnavailable(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise SeccompUnavailable(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def confine_calls() -> str:
    """The filter every runner takes at its start; what was applied, for the verdict."""
    install(ALWAYS_DENIED, unix_sockets=True)
    return "seccomp: no unix sockets, io_uring, ptrace, namespaces, mounts, modules, bpf, keyrings"


def forbid_exec() -> str:
    install(EXEC_DENIED)
    return "seccomp: no execve/execveat"
