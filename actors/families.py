"""Which operator families a task belongs to, read from its reference source. The family scopes
what memory may show a draft (docs/memory.md, "One decision beyond the brief"): the family's
verified worked example (the bundles' `example_<family>` items), banked kernels and lessons of
the same family only, and one learned decision per (backend, family).

A reading of the torch calls in the reference, not of the task's name: user suites name
their operators as they like. A fused task (say GEMM then softmax) has several families, the
dominant one (the most expensive op) first.
"""

from __future__ import annotations

import ast
import re

# (family, calls or attributes that mark it), in order of dominance.
_MARKERS: list[tuple[str, tuple[str, ...]]] = [
    ("matmul", ("matmul", "mm", "bmm", "baddbmm", "addmm", "einsum", "linear", "Linear", "Bilinear",
                "scaled_dot_product_attention")),
    ("conv", ("conv1d", "conv2d", "conv3d", "Conv1d", "Conv2d", "Conv3d", "conv_transpose1d",
              "conv_transpose2d", "ConvTranspose1d", "ConvTranspose2d")),
    ("window", ("max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "MaxPool1d", "MaxPool2d", "AvgPool1d",
                "AvgPool2d", "unfold")),
    ("scan", ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")),
    ("softmax_norm", ("softmax", "log_softmax", "Softmax", "LogSoftmax", "layer_norm", "LayerNorm",
                      "group_norm", "GroupNorm", "batch_norm", "BatchNorm1d", "BatchNorm2d", "rms_norm",
                      "RMSNorm", "rsqrt", "normalize", "norm", "instance_norm", "InstanceNorm2d")),
    ("row_reduction", ("sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "logsumexp",
                       "var", "std", "mse_loss", "cross_entropy", "huber_loss", "smooth_l1_loss", "kl_div",
                       "cosine_similarity", "all", "any")),
]
_MATMUL_OPERATOR = re.compile(r"[\w)\]]\s*@\s*[\w(]")


def operator_families(reference_source: str) -> list[str]:
    """The families of the reference's operators, dominant first; ["elementwise"] when none of
    the others is found (activations, arithmetic); [] when the source does not parse."""
    try:
        tree = ast.parse(reference_source)
    except SyntaxError:
        return []
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Name):
            names.add(node.id)
    found = [family for family, markers in _MARKERS if names.intersection(markers)]
    if "matmul" not in found and _MATMUL_OPERATOR.search(reference_source):
        found.insert(0, "matmul")
    return found or ["elementwise"]


# Every family a bundle has a verified worked example for (memory_actor/bundles/*.yaml).
FAMILIES = ("elementwise", "row_reduction", "softmax_norm", "scan", "window", "matmul", "conv")


def example_name(family: str) -> str:
    """The api item name of a family's verified worked example in the bundles."""
    return f"example_{family}"


def rung_name(family: str) -> str:
    """The api item name of a family's first rung in the bundles: the simplest correct kernel of
    the family's example task (issue 54), a separate option beside the idiomatic example."""
    return f"rung_{family}"


def dominant_family(reference_source: str) -> str:
    """The family the worked-example slot is judged by: the dominant one ('unknown' when the
    reference does not parse)."""
    families = operator_families(reference_source)
    return families[0] if families else "unknown"
