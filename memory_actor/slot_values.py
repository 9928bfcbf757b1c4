"""What each option of the draft decision (memory_actor/slots.py) is worth before it is chosen:
bare's posterior from the cold rates and the bank's bare drafts, every memory option's posterior
started at bare's, and how likely a memory option beats bare and what it costs in expectation
(issue 54, point 1).

Bare (the brief and the generic example) on a fresh draft starts from the operator's own cold
rate where it is known, the family's otherwise. The family's: `slot_prior`, the family's cold
record (`memory.cold_rates["backend/family"]` from screening, else the default model's measured
rate shipped in `bundles/measured_rates.yaml`) counted as at most `cold_prior_strength` drafts (a
pool's operators solve at very different rates: v4's pool solved 7% of its row-reduction
drafts, the held-out ones 53%), and this bank's fresh bare drafts of the family. The operator's:
its screening drafts (`cold_rates["backend/family/task"]`) and this bank's fresh bare drafts of
it, in full, over the family's mean counted as two drafts. On a retry no cold record applies (a
retry follows a failure and recovers at a far lower rate): bare is the slot prior and the bank's
bare retries of the family.

A memory option starts at bare's posterior mean, counted as at most `option_prior_strength`
drafts: no lift assumed (an option with the ranked items starts where the same option without
them stands, which is bare's while that one is untried: the ranked items add no assumed lift). Its own drafts in this family and context move it, and so do the default
model's published drafts that showed it (`options` in the shipped file, counted as at most
`cold_prior_strength` drafts, where `shipped_rates` is on): evidence, never an assumption, so an
option nobody tried ties with bare, and ties go to bare.
"""

from __future__ import annotations

import math
from functools import cache
from importlib import resources

import numpy as np
import yaml

from memory_actor.config import MemoryConfig

Beta = tuple[float, float]
GRID = 2000  # points of the integrals in compare(): its error is far below any threshold's meaning
# A backend whose language another's measurements stand for: the device takes the twin's language.
SHIPPED_ALIASES = {"npu": "npu-twin"}


def shrunk(prior: Beta, successes: float, trials: float, strength: float) -> Beta:
    """`prior` plus a record counted as at most `strength` drafts."""
    weight = min(1.0, strength / trials) if trials else 0.0
    return prior[0] + weight * successes, prior[1] + weight * (trials - successes)


def beta_mean(posterior: Beta) -> float:
    return posterior[0] / (posterior[0] + posterior[1])


def _grid_weights(posterior: Beta, grid: np.ndarray) -> np.ndarray:
    a, b = posterior
    log_pdf = (a - 1) * np.log(grid) + (b - 1) * np.log1p(-grid) - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
    w = np.exp(log_pdf - log_pdf.max())
    return w / w.sum()


def compare(x: Beta, y: Beta) -> tuple[float, float]:
    """(P(X > Y), E[max(Y - X, 0)]) for independent X ~ Beta(x), Y ~ Beta(y), by a midpoint rule on
    (0, 1): deterministic, so a frozen bank's greedy decision is the same on every call. With X a
    memory option and Y bare: how likely it is better, and the pass@1 it costs in expectation."""
    grid = (np.arange(GRID) + 0.5) / GRID
    wx, wy = _grid_weights(x, grid), _grid_weights(y, grid)
    below = np.cumsum(wy) - wy / 2  # P(Y < grid point), half of its own cell
    above = wy[::-1].cumsum()[::-1] - wy / 2  # P(Y > grid point)
    above_y = (wy * grid)[::-1].cumsum()[::-1] - wy * grid / 2  # E[Y; Y > grid point]
    better = float(np.clip(np.dot(wx, below), 0.0, 1.0))
    loss = float(max(np.dot(wx, above_y - grid * above), 0.0))
    return better, loss


@cache
def _shipped() -> dict[str, dict[str, tuple[int, int]]]:
    text = resources.files("memory_actor").joinpath("bundles", "measured_rates.yaml").read_text()
    content = yaml.safe_load(text)
    return {part: {key: (int(s), int(n)) for key, (s, n) in (content.get(part) or {}).items()}
            for part in ("rates", "options")}


def shipped_cold_rate(backend: str, family: str) -> tuple[int, int] | None:
    """The default model's measured cold record of a family (bundles/measured_rates.yaml, derived
    from the published benchmark screenings by bench/measured_rates.py); None where nothing was
    measured."""
    return _shipped()["rates"].get(f"{SHIPPED_ALIASES.get(backend, backend)}/{family}")


def shipped_option_record(backend: str, family: str, context: str, option: str) -> tuple[int, int] | None:
    """The default model's measured record of a memory option (its published evaluation drafts
    that showed it); None where nothing was measured."""
    return _shipped()["options"].get(f"{SHIPPED_ALIASES.get(backend, backend)}/{family}/{context}/{option}")


def family_cold_record(config: MemoryConfig, backend: str, family: str) -> tuple[int, int] | None:
    """[successes, drafts] of a family's fresh drafts shown nothing, before this bank: the run's
    screening (`cold_rates`), else the shipped measurement (with `shipped_rates`)."""
    screened = config.cold_rates.get(f"{backend}/{family}")
    if screened is not None:
        return int(screened[0]), int(screened[1])
    return shipped_cold_rate(backend, family) if config.shipped_rates else None


def operator_cold_record(config: MemoryConfig, backend: str, family: str, task_id: str) -> tuple[int, int] | None:
    screened = config.cold_rates.get(f"{backend}/{family}/{task_id}")
    return (int(screened[0]), int(screened[1])) if screened is not None else None


def bare_posterior(config: MemoryConfig, family_record: tuple[int, int] | None, bank_family: tuple[int, int],
                   operator_record: tuple[int, int]) -> Beta:
    """Bare's Beta posterior. The family's: the slot prior, the family's cold record counted as at
    most `cold_prior_strength` drafts (it measured a pool, often in another run), this bank's bare
    drafts of the family's other operators (`bank_family`) in full. Where the operator's own
    record is known (its screening drafts, the bank's bare drafts of it), that record in full over
    the family's mean counted as the slot prior's weight (two drafts): the operator's own rate
    leads, the family's only anchors it."""
    family = shrunk(tuple(config.slot_prior), *(family_record or (0, 0)), config.cold_prior_strength)
    family = family[0] + bank_family[0], family[1] + bank_family[1] - bank_family[0]
    if operator_record[1] == 0:
        return family
    a, b = untried_at(family, sum(config.slot_prior))
    return a + operator_record[0], b + operator_record[1] - operator_record[0]


def untried_at(bare: Beta, strength: float) -> Beta:
    """A memory option's prior: bare's posterior mean, counted as at most `strength` drafts."""
    weight = min(bare[0] + bare[1], strength)
    mean = beta_mean(bare)
    return mean * weight, (1 - mean) * weight
