"""The second, awkward set of sizes every correctness check also runs (issue 45).

A kernel that is right only at the size it was checked at (a tail skipped, a size argument
ignored, a length divided by the block count and the remainder dropped) passes at one friendly
fitted size: those are powers of two more often than not. So each task also gets a second set
of sizes, derived from its own size constants: every constant of at least MIN_EXTENT becomes
the largest prime below half of it (16384 -> 8191, 128 -> 61, 16 -> 7). A prime is odd, so no
multiple of a tile, a vector width or a 32-byte block, and it is a multiple of no block count
but itself; half the extent keeps the check cheap. Constants below MIN_EXTENT (kernel sizes,
heads, groups: hyperparameters more than extents) keep their value.

The set is probed like the fitted one (on the meta device): where changing every constant at
once breaks the task (a divisibility rule: `embed_dim % num_heads`), equal constants are changed
group by group and those that break are left; where none can change (weights shaped at
construction, a fixed view) the task has no second size and says why.
"""

from __future__ import annotations

from dataclasses import dataclass

from npu_pool.tasks.sizing import Probe, try_sizes, with_constants

MIN_EXTENT = 16  # constants below this are not treated as extents
SHRINK_LIMIT = 8  # passes that shrink a second size further to fit under half the first's cost


def largest_prime_at_most(n: int) -> int | None:
    """The largest prime <= n, or None when there is none (n < 2)."""
    for candidate in range(n, 1, -1):
        if all(candidate % d for d in range(2, int(candidate**0.5) + 1)):
            return candidate
    return None


def awkward(value: int) -> int | None:
    """The awkward counterpart of one size constant, or None to keep it (below MIN_EXTENT)."""
    if value < MIN_EXTENT:
        return None
    return largest_prime_at_most(value // 2 - 1)


@dataclass
class SecondSize:
    """The second sizes (every size constant, changed or not) and the source written with them;
    or, where the task allows none, `sizes` None and `note` saying why."""

    sizes: dict[str, int] | None
    source: str | None
    probe: Probe | None
    note: str = ""


def _cheaper(second: Probe, first: Probe) -> bool:
    """At most half the first's tensor bytes and FLOPs: the second check costs a fraction."""
    return second.tensor_bytes * 2 <= first.tensor_bytes and (first.flops == 0 or second.flops * 2 <= first.flops)


def second_sizes(source: str, sizes: dict[str, int], first: Probe, filename: str = "<task>") -> SecondSize:
    """The second set of sizes for a task written as `source` with its size constants `sizes`
    (as fitted), whose probe at those sizes is `first`."""
    if not sizes:
        return SecondSize(None, None, None, "the task's sizes are fixed by its module (no module-level constant "
                          "changes a shape without breaking it): checked at the task size only")
    groups: dict[int, list[str]] = {}
    for name, value in sizes.items():
        if awkward(value) is not None:
            groups.setdefault(value, []).append(name)
    if not groups:
        return SecondSize(None, None, None, f"every size constant is below {MIN_EXTENT}: checked at the task size only")

    def attempt(values: dict[str, int]) -> Probe | None:
        found = try_sizes(source, values, first, filename)
        return found if found is not None and found.shape_key() != first.shape_key() else None

    every = {name: awkward(value) for value, names in groups.items() for name in names}
    chosen, probe = dict(every), attempt(every)
    if probe is None:  # a rule ties some sizes: change equal ones together, keep those that break it
        chosen, probe = {}, None
        for value in sorted(groups, reverse=True):
            trial = chosen | {name: awkward(value) for name in groups[value]}
            found = attempt(trial)
            if found is not None:
                chosen, probe = trial, found
    if probe is None:
        return SecondSize(None, None, None, "the task's sizes are fixed by its module (no size constant can change "
                          "without breaking it: weights shaped at construction, or a rule tying the sizes): "
                          "checked at the task size only")
    for _ in range(SHRINK_LIMIT):  # still costly (one extent halved of several): halve the largest again
        if _cheaper(probe, first):
            break
        name = max(chosen, key=lambda n: chosen[n])
        smaller = awkward(chosen[name])
        found = attempt(chosen | {name: smaller}) if smaller is not None else None
        if found is None:
            break
        chosen, probe = chosen | {name: smaller}, found
    full = dict(sizes) | chosen
    return SecondSize(full, with_constants(source, chosen), probe)


def describe(sizes: dict[str, int], first: dict[str, int] | None = None) -> str:
    """`batch_size=61, dim=8191` (the constants that differ from `first`, when given)."""
    shown = {n: v for n, v in sizes.items() if first is None or first.get(n) != v} or sizes
    return ", ".join(f"{n}={v}" for n, v in shown.items())
