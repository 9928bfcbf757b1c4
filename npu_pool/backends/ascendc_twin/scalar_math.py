"""Which kernels get the twin's scalar math counter (include/twin_scalar_math.h): those whose text
calls one of the names the header counts, read from the header itself so the two never differ."""

from __future__ import annotations

import re

from npu_pool.backends.ascendc_twin.build import TWIN_INCLUDE


def _scalar_math_names() -> tuple[str, ...]:
    text = (TWIN_INCLUDE / "twin_scalar_math.h").read_text()
    return tuple(re.findall(r"^#define (\w+)\(x, \.\.\.\)", text, re.MULTILINE))


# A call of a scalar math function (the names twin_scalar_math.h counts) anywhere in the kernel.
SCALAR_MATH_CALL = re.compile(r"\b(?:" + "|".join(_scalar_math_names()) + r")\s*\(")


def scalar_math_include(source: str) -> str:
    """The forced include's last line for a kernel that calls scalar math (each call counted and
    charged to the scalar unit); nothing for the others, whose build is unchanged."""
    return '#include "twin_scalar_math.h"\n' if SCALAR_MATH_CALL.search(source) else ""
