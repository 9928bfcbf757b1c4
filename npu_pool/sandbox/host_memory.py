"""The machine's own memory limit, and whose limit an out-of-memory kill was (issue 55).

A candidate's control group (tree_limits) sits inside ours. When ours, or one above it (a
container's limit, a systemd slice), holds less than the candidate's `memory_limit_mb`, the
kernel's OOM killer stops the candidate at the *host's* limit: a good kernel whose torch
extension compile peaks at 2 GB dies in a 2 GB container while its own limit says 8 GiB. That
is the machine's fault, not the candidate's: the verdict must be an infrastructure fault (no
reward), naming the host's limit and what to set.

Whose limit it was is read from the candidate's own group after the kill: its own limit was
hit when the group's fail counter (v1 `memory.failcnt`) or its `max`/`oom` events (v2
`memory.events`) moved, or its peak usage came within `_OWN_LIMIT_SHARE` of its limit.
Otherwise the OOM kill came from above: the host.
"""

from __future__ import annotations

from pathlib import Path

from npu_pool.sandbox import tree_limits

_OWN_LIMIT_SHARE = 0.9  # a peak this close to the candidate's own limit: its own limit was hit
_NO_LIMIT = 2**62  # v1 writes "no limit" as about 2**63, rounded down to the page size


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _number(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def _counter(text: str, key: str) -> int:
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
            return int(parts[1])
    return 0


def oom_verdict(group: tree_limits.TreeGroup) -> str | None:
    """After the run: "out_of_memory" when the OOM killer stopped the tree at its own limit,
    "host_out_of_memory" when a limit above it, the machine's, did; else None."""
    if not group.oom_kills():
        return None
    return "out_of_memory" if own_limit_hit(group.kind, group.memory, group.memory_mb) else "host_out_of_memory"


def own_limit_hit(kind: str, folder: Path, memory_mb: int) -> bool:
    """Whether the candidate's group (`folder`, of `kind` "cgroup v1"/"cgroup v2") reached its
    own limit of `memory_mb`, as opposed to being killed by a limit above it."""
    if kind == "cgroup v2":
        events = _read(folder / "memory.events")
        hit = _counter(events, "max") + _counter(events, "oom") > 0
        peak = _number(_read(folder / "memory.peak"))
    else:
        hit = (_number(_read(folder / "memory.failcnt")) or 0) > 0
        peak = _number(_read(folder / "memory.max_usage_in_bytes"))
    return hit or (peak is not None and peak >= _OWN_LIMIT_SHARE * memory_mb * 2**20)


def _limit_of(folder: Path) -> int | None:
    """A group's own memory limit in bytes (v2 memory.max, v1 memory.limit_in_bytes), None: none."""
    for name in ("memory.max", "memory.limit_in_bytes"):
        value = _number(_read(folder / name))
        if value is not None:
            return value if value < _NO_LIMIT else None
    return None


def _ancestors(folder: Path, mount_point: Path) -> list[Path]:
    """`folder` and every group above it, up to and including the hierarchy's root."""
    chain = [folder]
    while chain[-1] != mount_point and mount_point in chain[-1].parents:
        chain.append(chain[-1].parent)
    return chain


def _mount_point(folder: Path) -> Path:
    for parent in [folder, *folder.parents]:
        if (parent / "cgroup.procs").exists() and not (parent.parent / "cgroup.procs").exists():
            return parent
    return folder


def host_limit_mb() -> tuple[int, str]:
    """The least memory this process's tree may hold on this machine, and where that bound
    comes from: the smallest memory limit of our cgroups and those above them, or the RAM."""
    total_kib = _counter(_read(Path("/proc/meminfo")).replace(":", "").replace(" kB", ""), "MemTotal")
    best, where = total_kib // 1024 or _NO_LIMIT, "the machine's memory (MemTotal)"
    for key in ("v2", "memory"):
        own = tree_limits._own_cgroups().get(key)
        if own is None:
            continue
        for folder in _ancestors(own, _mount_point(own)):
            limit = _limit_of(folder)
            if limit is not None and limit // 2**20 < best:
                best, where = limit // 2**20, f"the memory limit of cgroup {folder}"
    return best, where


def host_fault_line(memory_mb: int, stage: str) -> str:
    """The one line an OOM kill from above gets: what happened, what to set."""
    limit, where = host_limit_mb()
    return (f"the machine's own memory limit ({limit} MiB, {where}) killed the candidate during {stage}, "
            f"below its limit of {memory_mb} MiB: not the candidate's fault. Give the machine more memory, "
            f"or lower harness.memory_limit_mb (and --max-in-flight) to fit in {limit} MiB")


def oom_kills() -> tuple[int, str]:
    """How many processes of this process's own memory cgroup the kernel's OOM killer has stopped
    so far (v1 `memory.oom_control`, v2 `memory.events.local`: processes of this group itself,
    not of the candidates' groups below it), and the group's folder; (0, "") where none is
    readable. Ray's processes on this node (its workers, the memory actor, episode workers) live
    in the driver's group: a kill there that coincides with a lost worker says who took it."""
    own = tree_limits._own_cgroups()
    for key, name, counter in (("memory", "memory.oom_control", "oom_kill"), ("v2", "memory.events.local", "oom_kill"),
                               ("v2", "memory.events", "oom_kill")):
        folder = own.get(key)
        if folder is not None and (text := _read(folder / name)):
            return _counter(text, counter), str(folder)
    return 0, ""


def oom_kill_line(before: int) -> str | None:
    """A lost worker's cause, when the OOM killer stopped processes of this group since BEFORE
    (oom_kills' count): the line that says so, with the machine's limit; else None."""
    now, folder = oom_kills()
    if now <= before:
        return None
    limit, where = host_limit_mb()
    return (f"the kernel's OOM killer stopped {now - before} process(es) of this run meanwhile (cgroup {folder}): "
            f"the machine's memory ({limit} MiB, {where}) did not hold the run and its candidates")
