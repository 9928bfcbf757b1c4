"""Cast's rounding modes and the half/bfloat16 conversions of the twin, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from tests.npu_pool.backends.ascendc_twin.twin_support import make_tiling

MODES = {"CAST_NONE": 0, "CAST_RINT": 1, "CAST_FLOOR": 2, "CAST_CEIL": 3, "CAST_ROUND": 4, "CAST_TRUNC": 5, "CAST_ODD": 6}


def values() -> np.ndarray:
    rng = np.random.default_rng(1)
    special = [0.0, -0.0, 0.5, 1.5, 2.5, -2.5, -0.5, 65504.0, 65519.99, 65520.0, 1e6, -1e6, 6e-8, 3e-8, 2.9e-8,
               1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-11 + 2**-20, -(1 + 2**-11), 2**-24, 2**-25, 1.0 / 3, np.inf, -np.inf]
    random = np.concatenate([rng.standard_normal(4000) * 10, rng.standard_normal(4000) * 1e-5,
                             rng.uniform(-70000, 70000, 4000)])
    out = np.concatenate([np.array(special, np.float64), random]).astype(np.float32)
    return np.concatenate([out, np.zeros((-out.size) % 64, np.float32)])


def cast(lib, mode: str):
    x = values()
    h = np.zeros(x.size, np.uint16)
    i = np.zeros(x.size, np.int32)
    run = lib.run("cast_modes", 1, [("a", x, 0), ("b", h, 1), ("c", i, 1)], make_tiling((x.size, MODES[mode])))
    assert run.rc == 0, run.fault
    return x, h.view(np.float16), i


@np.errstate(over="ignore")
def neighbours(x: np.ndarray):
    """The two float16 values around each x (equal where exact)."""
    near = x.astype(np.float16)
    lo = np.where(near.astype(np.float32) > x, np.nextafter(near, np.float16(-np.inf)), near)
    hi = np.where(near.astype(np.float32) < x, np.nextafter(near, np.float16(np.inf)), near)
    return lo, hi


def test_float_to_half_nearest_even_matches_numpy(fidelity):
    for mode in ("CAST_NONE", "CAST_RINT"):
        x, h, _ = cast(fidelity, mode)
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(h.view(np.uint16), x.astype(np.float16).view(np.uint16), err_msg=mode)


@pytest.mark.parametrize("mode", ["CAST_FLOOR", "CAST_CEIL", "CAST_TRUNC", "CAST_ROUND", "CAST_ODD"])
def test_float_to_half_directed_modes(fidelity, mode):
    x, h, _ = cast(fidelity, mode)
    finite = np.abs(x) <= 65504
    x, h = x[finite], h[finite]
    lo, hi = neighbours(x)
    exact = lo == hi
    if mode == "CAST_FLOOR":
        expected = lo
    elif mode == "CAST_CEIL":
        expected = hi
    elif mode == "CAST_TRUNC":
        expected = np.where(x < 0, hi, lo)
    elif mode == "CAST_ROUND":
        dl, dh = x - lo.astype(np.float64), hi.astype(np.float64) - x
        expected = np.where(dl < dh, lo, np.where(dh < dl, hi, np.where(x < 0, lo, hi)))
    else:  # round to odd: the neighbour with an odd last bit where inexact
        expected = np.where(lo.view(np.uint16) & 1, lo, hi)
    expected = np.where(exact, lo, expected)
    np.testing.assert_array_equal(h.view(np.uint16), expected.view(np.uint16))


@pytest.mark.parametrize("mode,fn", [("CAST_RINT", np.rint), ("CAST_FLOOR", np.floor), ("CAST_CEIL", np.ceil),
                                     ("CAST_TRUNC", np.trunc),
                                     ("CAST_ROUND", lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5))])
def test_float_to_int32_modes(fidelity, mode, fn):
    x, _, i = cast(fidelity, mode)
    finite = np.isfinite(x)
    np.testing.assert_array_equal(i[finite], np.clip(fn(x[finite].astype(np.float64)), -2**31, 2**31 - 1).astype(np.int32))


def test_half_overflow_and_subnormals(fidelity):
    x, h, _ = cast(fidelity, "CAST_RINT")
    assert h[x == 65520.0][0] == np.inf  # halfway to the next binade rounds up to infinity
    assert h[x == np.float32(65519.99)][0] == np.float16(65504)
    assert h[x == np.float32(3e-8)][0] == np.float16(2**-24)  # nearest subnormal
    x, h, _ = cast(fidelity, "CAST_TRUNC")
    assert h[x == 1e6][0] == np.float16(65504)  # toward zero saturates instead of infinity


def test_cast_mask_repeat_form_and_back(fidelity):
    x = values()
    finite = np.where(np.abs(x) < 60000, x, 0).astype(np.float32)
    h = np.zeros(x.size, np.uint16)
    back = np.full(x.size, np.nan, np.float32)
    run = fidelity.run("cast_masked", 1, [("a", finite, 0), ("b", h, 1), ("c", back, 1)], make_tiling((x.size,)))
    assert run.rc == 0, run.fault
    np.testing.assert_array_equal(h, finite.astype(np.float16).view(np.uint16))
    np.testing.assert_array_equal(back, finite.astype(np.float16).astype(np.float32))
