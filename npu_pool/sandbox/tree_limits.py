"""Bounds on a candidate's whole process tree: its memory and its process count, all processes
together (issue 45.9). Per-process limits do not add up: RLIMIT_DATA bounds each process, and a
kernel whose every child forks again reached 10 GB; RLIMIT_NPROC does not apply to root.

Where the platform lets us, each candidate gets a control group of its own, made by the parent
before the run and joined by the keeper before it forks anything (so every process the
candidate starts is in it): `memory.max` (v2) or `memory.limit_in_bytes` (v1) at
`memory_limit_mb`, swap off, and `pids.max` at `process_limit` tasks (threads count). cgroup v2
is used where our cgroup's controllers include memory and pids and the subtree may enable them;
else the v1 memory and pids hierarchies where they are mounted and writable (this project's
development machines: a v1 hierarchy beside a v2 one with no controllers). A fork that would
pass `pids.max` fails; the parent sees the `max` event and ends the tree at once (a verdict,
never a machine full of spinning processes); the kernel's OOM killer stops the tree at its
memory limit, and the parent reads the kill from the group's counters.

Without a writable cgroup, a watchdog in the parent walks the keeper's descendants every
WATCH_S and kills the keeper's process group when they are more than `process_limit` or
their private memory (not the pages shared with the warm server) sums past `memory_limit_mb`: what the tree starts within one interval
is not bounded by it, only by RLIMIT_NPROC (not for root) and RLIMIT_DATA per process.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

WATCH_S = 0.1  # the fallback watchdog's interval
_counter = itertools.count()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _counter_in(text: str, key: str) -> int:
    """`key N` from a flat-keyed cgroup file (pids.events, memory.events, memory.oom_control)."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
            return int(parts[1])
    return 0


@functools.cache
def _own_cgroups() -> dict[str, Path]:
    """The folders of this process's cgroups: {"v2": ..., "memory": ..., "pids": ...}, where mounted."""
    mounts: dict[str, tuple[str, str]] = {}  # controller or "v2" -> (mount point, mount root)
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        if " - " not in line:
            continue
        fields, after = line.split(), line.split(" - ", 1)[1]
        fstype, _, options = after.split()[:3]
        root, point = fields[3], fields[4]
        if fstype == "cgroup2":
            mounts.setdefault("v2", (point, root))
        elif fstype == "cgroup":
            for controller in ("memory", "pids"):
                if controller in options.split(","):
                    mounts.setdefault(controller, (point, root))
    found: dict[str, Path] = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        hierarchy, controllers, path = line.split(":", 2)
        keys = ["v2"] if hierarchy == "0" and controllers == "" else [c for c in controllers.split(",") if c in ("memory", "pids")]
        for key in keys:
            if key in mounts:
                point, root = mounts[key]
                relative = path[len(root):] if root != "/" and path.startswith(root) else path
                found[key] = Path(point + relative)
    return found


def _v2_base() -> Path | None:
    """Our v2 cgroup, where its children can have the memory and pids controllers."""
    base = _own_cgroups().get("v2")
    if base is None or not {"memory", "pids"} <= set(_read(base / "cgroup.controllers").split()):
        return None
    if not {"memory", "pids"} <= set(_read(base / "cgroup.subtree_control").split()):
        try:  # allowed at the root, or where our group has no processes of its own
            (base / "cgroup.subtree_control").write_text("+memory +pids")
        except OSError:
            return None
    return base


@dataclass
class TreeGroup:
    """One candidate's control group(s): v2 one folder, v1 one per controller."""

    kind: str  # "cgroup v2" or "cgroup v1"
    memory: Path | None
    pids: Path | None
    process_limit: int
    memory_mb: int
    folders: list[Path] = field(default_factory=list)

    def join_files(self) -> list[str]:
        """The `cgroup.procs` files the keeper writes itself into (`0`: the writer)."""
        return [str(f / "cgroup.procs") for f in self.folders]

    def check(self) -> str | None:
        """While the candidate runs: "process_limit" once a fork failed at pids.max (the memory
        bound is the kernel's OOM killer, read afterwards with oom_kills)."""
        return "process_limit" if self.process_limit_hit() else None

    def process_limit_hit(self) -> bool:
        return self.pids is not None and _counter_in(_read(self.pids / "pids.events"), "max") > 0

    def oom_kills(self) -> int:
        if self.memory is None:
            return 0
        if self.kind == "cgroup v2":
            return _counter_in(_read(self.memory / "memory.events"), "oom_kill")
        return _counter_in(_read(self.memory / "memory.oom_control"), "oom_kill")

    def kill_all(self) -> None:
        """SIGKILL every process left in the group (v2: cgroup.kill; v1: over and over, as
        a fork may race the sweep; pids.max bounds how many there can be)."""
        if self.kind == "cgroup v2" and self.folders:
            try:
                (self.folders[0] / "cgroup.kill").write_text("1")
                return
            except OSError:
                pass
        for _ in range(50):
            pids = {int(p) for f in self.folders for p in _read(f / "cgroup.procs").split()}
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        """Kill what is left, then remove the folders (a folder goes once its processes are reaped;
        one whose last process is still a zombie of the warm server is removed later, below)."""
        self.kill_all()
        for folder in self.folders:
            for _ in range(200):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
            else:
                _unremoved.add(folder)


# Groups of ours whose folder outlived remove() (its last process not yet reaped): retried at the
# next create() and when this process exits, so an empty group does not linger until someone's
# next verify (issue 55; _sweep only takes the groups of owners that died).
_unremoved: set[Path] = set()


@atexit.register
def remove_unremoved(wait_s: float = 5.0) -> None:
    """Remove the groups remove() could not, waiting up to `wait_s` for their last processes."""
    deadline = time.monotonic() + wait_s
    while _unremoved:
        for folder in list(_unremoved):
            try:
                folder.rmdir()
                _unremoved.discard(folder)
            except FileNotFoundError:
                _unremoved.discard(folder)
            except OSError:
                pass
        if not _unremoved or time.monotonic() >= deadline:
            return
        time.sleep(0.05)


def _make(base: Path, name: str, settings: dict[str, str]) -> Path | None:
    folder = base / name
    try:
        folder.mkdir()
    except OSError:
        return None
    for key, value in settings.items():
        try:
            (folder / key).write_text(value)
        except OSError:
            if key in ("memory.max", "memory.limit_in_bytes", "pids.max"):  # the bound itself: no group
                folder.rmdir()
                return None
    return folder


def create(memory_mb: int, process_limit: int) -> TreeGroup | None:
    """A control group for one candidate with both bounds, or None where none can be made here
    (then the watchdog). Stale groups of dead owners are removed on the way."""
    remove_unremoved(wait_s=0)
    name = f"evokernel-{os.getpid()}-{next(_counter)}"
    limit = str(memory_mb * 2**20)
    if (base := _v2_base()) is not None:
        _sweep(base)
        folder = _make(base, name, {"memory.max": limit, "memory.swap.max": "0", "pids.max": str(process_limit)})
        if folder is not None:
            return TreeGroup("cgroup v2", folder, folder, process_limit, memory_mb, [folder])
    own = _own_cgroups()
    if "memory" not in own or "pids" not in own:
        return None
    for base in (own["memory"], own["pids"]):
        _sweep(base)
    memory = _make(own["memory"], name, {"memory.limit_in_bytes": limit, "memory.memsw.limit_in_bytes": limit})
    pids = _make(own["pids"], name, {"pids.max": str(process_limit)}) if memory is not None else None
    if memory is None or pids is None:
        if memory is not None:
            memory.rmdir()
        return None
    return TreeGroup("cgroup v1", memory, pids, process_limit, memory_mb, [memory, pids])


def _sweep(base: Path) -> None:
    """Remove empty candidate groups whose owner died before it removed them (a kill -9)."""
    try:
        entries = list(base.glob("evokernel-*-*"))
    except OSError:
        return
    for folder in entries:
        owner = folder.name.split("-")[1]
        if owner.isdigit() and not _alive(int(owner)):
            try:
                folder.rmdir()
            except OSError:
                pass


def _dead_owners(base: Path) -> list[Path]:
    try:
        entries = list(base.glob("evokernel-*-*"))
    except OSError:
        return []
    return [folder for folder in entries
            if (owner := folder.name.split("-")[1]).isdigit() and not _alive(int(owner))]


def _alive(pid: int) -> bool:
    """Whether PID runs: a zombie (exited, not yet reaped by its parent) does not, and will never
    remove its groups (a Ray worker at the run's end, its raylet gone: issue 63's groups left)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def sweep_dead_owners(wait_s: float = 5.0) -> list[str]:
    """At a run's end (issue 63): the groups of owners that died without removing them (a task
    loader's group when Ray SIGKILLs the episode worker that started it; a candidate's whose
    client was killed), with whatever still runs in them killed, removed; the folders removed.
    `_sweep` at the next create() takes only empty ones, and nobody may create one for a while."""
    own = _own_cgroups()
    bases = [base for base in (_v2_base(), own.get("memory"), own.get("pids")) if base is not None]
    groups = [folder for base in dict.fromkeys(bases) for folder in _dead_owners(base)]
    removed: list[str] = []
    deadline = time.monotonic() + wait_s
    while groups:
        for folder in list(groups):
            for pid in _read(folder / "cgroup.procs").split():  # orphans of the dead owner: nobody's now
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, PermissionError, ValueError):
                    pass
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError:  # its last processes are not reaped yet
                continue
            groups.remove(folder)
            removed.append(str(folder))
        if not groups or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    return removed


def describe(group: TreeGroup | None, joined: str | None) -> str:
    """How the whole process tree was bounded (`joined`: the keeper's record), for the verdict."""
    if group is None:
        return f"watchdog every {WATCH_S:g} s (no writable cgroup here)"
    if joined not in ("joined", None):  # None: the keeper was killed before it wrote its record
        import structlog

        structlog.get_logger("npu_pool.sandbox.tree_limits").warning("tree_limits_not_applied", detail=joined)
        return f"{group.kind}: {joined}"
    return f"{group.kind} (memory and process count of the whole tree)"


def _children(pid: int) -> list[int]:
    children: list[int] = []
    for task in _read_dir(Path(f"/proc/{pid}/task")):
        children += [int(c) for c in _read(Path(f"/proc/{pid}/task/{task}/children")).split()]
    return children


def _read_dir(path: Path) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


class Watchdog:
    """The fallback where no cgroup can be made: the keeper's descendants counted and their
    private memory summed every WATCH_S; over a bound, `check` says which."""

    def __init__(self, keeper: int, memory_mb: int, process_limit: int):
        self.keeper, self.memory_mb, self.process_limit = keeper, memory_mb, process_limit
        self._next = 0.0

    def check(self) -> str | None:
        now = time.monotonic()
        if now < self._next:
            return None
        self._next = now + WATCH_S
        seen, frontier = set(), [self.keeper]
        while frontier:
            for child in _children(frontier.pop()):
                if child not in seen:
                    seen.add(child)
                    frontier.append(child)
        if len(seen) > self.process_limit:
            return "process_limit"
        # private memory only: the pages a process shares with the warm server (torch) are not its own
        private_kib = sum(_counter_kib(_read(Path(f"/proc/{pid}/smaps_rollup")), ("Private_Clean:", "Private_Dirty:"))
                          for pid in seen)
        return "out_of_memory" if private_kib > self.memory_mb * 1024 else None


def _counter_kib(text: str, keys: tuple[str, ...]) -> int:
    total = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in keys and parts[1].isdigit():
            total += int(parts[1])
    return total
