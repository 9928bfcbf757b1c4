"""Kernel mechanisms that confine a candidate's process: Landlock and PID namespaces.

File system: Landlock (Linux 5.13+, unprivileged) makes every path unreadable except the
paths a read rule allows (npu_pool.sandbox.read_allow derives them) and read-only except the folders
a write rule allows; it holds for Python and compiled code alike, and for every process the
candidate starts (the compiler included). Where the kernel has ABI 4+ it also forbids TCP bind/connect (a
backstop to the network namespace), and ABI 6+ scopes signals and abstract unix sockets
to the candidate's own processes. Processes: a new PID namespace, whose init's death kills
every process in it; where user namespaces are off, a child subreaper that sweeps up
every descendant instead. All calls are raw syscalls through ctypes: no extra dependency.
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("npu_pool.sandbox.confinement")

_libc = ctypes.CDLL(None, use_errno=True)

# x86_64 and aarch64 share these numbers (the syscalls are newer than the split tables).
_SYS_LANDLOCK_CREATE_RULESET, _SYS_LANDLOCK_ADD_RULE, _SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS, _PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 38, 1, 36
CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x20000000, 0x40000000

# Landlock file-system rights (uapi/linux/landlock.h).
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_READ = _EXECUTE | _READ_FILE | _READ_DIR
_REMOVE_DIR, _REMOVE_FILE = 1 << 4, 1 << 5
_MAKE = (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12)
_REFER, _TRUNCATE = 1 << 13, 1 << 14
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE  # what a rule on a non-directory may carry
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel's struct is packed: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class ConfinementError(OSError):
    """A confinement step failed where it was expected to work."""


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 where it has none (or it is disabled)."""
    if platform.system() != "Linux":
        return 0
    version = _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                            ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _write_rights(abi: int) -> int:
    rights = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    return rights


def restrict_writes(writable: list[Path], writable_files: tuple[str, ...] = ("/dev/null",),
                    executable: bool = True) -> dict[str, object]:
    """Make everything but `writable` (folders, with what is beneath) read-only for this
    process and all it starts, for good; reading stays as the layers before allowed; with
    `executable` False, no program may be executed any more, anywhere. Layers stack: a later
    call can only narrow. Returns what was applied; raises ConfinementError."""
    return restrict(writable, None, writable_files, executable)


def restrict(writable: list[Path], readable: list[Path] | None,
             writable_files: tuple[str, ...] = ("/dev/null",), executable: bool = True) -> dict[str, object]:
    """One Landlock layer for this process and all it starts, for good: `writable` folders
    (and `writable_files`) may be written, and where `readable` is given, nothing outside it
    and `writable` may be read, listed or executed (files or folders; missing ones are
    skipped); with `executable` False nothing may be executed at all (execve; mapping a
    library is not execution to Landlock). Returns what was applied; raises ConfinementError."""
    abi = landlock_abi()
    if abi < 1:
        raise ConfinementError("Landlock is not available on this kernel")
    write = _write_rights(abi)
    handled = write | (_READ if readable is not None else 0) | (0 if executable else _EXECUTE)
    granted = handled & ~(0 if executable else _EXECUTE)  # what a rule may give: never execution when withheld
    attr = _RulesetAttr(handled_access_fs=handled)
    size = 8
    if abi >= 4:
        attr.handled_access_net, size = _NET_BIND_TCP | _NET_CONNECT_TCP, 16  # no rules: no TCP at all
    if abi >= 6:
        attr.scoped, size = _SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX_SOCKET, 24
    ruleset = _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise ConfinementError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for folder in writable:
            _add_rule(ruleset, str(folder), granted)
        for path in readable or ():
            if os.path.exists(path):
                _add_rule(ruleset, str(path), _READ & granted)
        for file in writable_files:
            if os.path.exists(file):
                _add_rule(ruleset, file, (_WRITE_FILE | (_TRUNCATE if abi >= 3 else 0)) | (granted & _READ))
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise ConfinementError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if _libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
            raise ConfinementError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    applied: dict[str, object] = {"filesystem": f"landlock (ABI {abi})", "writable": [str(p) for p in writable],
                                  "tcp": "forbidden" if abi >= 4 else "not handled by landlock",
                                  "signals_scoped": abi >= 6, "execution": "allowed" if executable else "forbidden"}
    if readable is not None:
        applied["readable_paths"] = sum(1 for p in readable if os.path.exists(p))  # `doctor` lists them
    return applied


def _add_rule(ruleset: int, path: str, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if not os.path.isdir(path):  # the kernel refuses folder rights on a file (EINVAL)
            rights &= _FILE_RIGHTS
        rule = _PathBeneathAttr(allowed_access=rights, parent_fd=fd)
        if _libc.syscall(_SYS_LANDLOCK_ADD_RULE, ruleset, ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                         ctypes.c_uint32(0)) != 0:
            raise ConfinementError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)


def enter_pid_namespace() -> bool:
    """unshare(CLONE_NEWPID): the next child is init of a new PID namespace. Needs a user
    namespace of ours (the sandbox server runs in one) or CAP_SYS_ADMIN; False if refused."""
    return _libc.unshare(ctypes.c_int(CLONE_NEWPID)) == 0


def enter_network_namespace() -> bool:
    """unshare(CLONE_NEWNET): this process and its children get a network namespace of their
    own (only loopback, down). Needs the server's user namespace; False if refused."""
    return _libc.unshare(ctypes.c_int(CLONE_NEWNET)) == 0


def become_subreaper() -> None:
    """Orphaned descendants are re-parented to this process instead of init."""
    _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    _libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


def kill_children(own_pid: int) -> int:
    """SIGKILL every process whose parent is `own_pid` and reap them; repeat until none is
    left (a subreaper keeps receiving orphans while their parents die). Returns how many."""
    killed = 0
    for _ in range(100):
        children = _children(own_pid)
        if not children:
            break
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
    return killed


def _children(parent: int) -> list[int]:
    try:
        text = Path(f"/proc/{parent}/task/{parent}/children").read_text()
        return [int(p) for p in text.split()]
    except OSError:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                    found.append(int(entry.name))
        return found


@functools.cache
def network_namespace_available() -> bool:
    """Whether `unshare -rn` (an unprivileged user + network namespace) works here."""
    if shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def confinement_support() -> dict[str, Any]:
    """What this platform offers to confine candidates (for `doctor` and every verdict)."""
    abi = landlock_abi()
    userns = network_namespace_available()
    return {"filesystem": f"landlock (ABI {abi})" if abi else None,
            "reads": "allow-list (landlock)" if abi else None,
            "processes": "pid namespace" if userns else "subreaper (kills every descendant)",
            "network": "network namespace" if userns else ("landlock: no TCP" if abi >= 4 else None)}


class SandboxUnavailable(RuntimeError):
    """The platform cannot confine candidates and harness.confinement is `require`."""


def check_confinement(policy: str) -> dict[str, Any]:
    """The support record; raises SandboxUnavailable under `require` where a part is missing."""
    support = confinement_support()
    if support["filesystem"] is None:
        words = ("this kernel has no Landlock (Linux 5.13+ with landlock in the lsm= list): a candidate could "
                 "read and write anywhere this user can (verdict text is still scrubbed of known secrets)")
        if policy == "require":
            raise SandboxUnavailable(words + "; set harness.confinement: warn (--set harness.confinement=warn) to run "
                                     "without file-system confinement (reads and writes)")
        _warn_once(words)
    return support


@functools.cache
def _warn_once(words: str) -> None:
    log.warning("sandbox_unconfined", detail=words)
