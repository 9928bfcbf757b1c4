"""Fit a KernelBench task to a memory and time budget by shrinking its size constants.

Public KernelBench sizes target 80 GB GPUs. Module-level integer constants
are read from the AST: literals, arithmetic over literals and earlier constants, and tuples
of these (`M = 16384 * 4`, `input_shape = (32768,)`). One built from literals alone is a
*size* when changing it changes the shape of an input tensor or a parameter; reduction axes
and hyperparameters (`dim = 1` passed to the constructor, `num_groups`) change neither and
are never touched. Everything is probed on the meta device, so even a 6 GB input costs
nothing. Sizes are rewritten as literals in the source text; derived constants keep their
expressions, so they follow.
"""

from __future__ import annotations

import ast
import itertools
import operator
import re
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

_module_counter = itertools.count()


class TaskProbeError(Exception):
    """The task file could not be executed or probed."""


# Module-level constants are read by walking the AST, never by running the file: only int
# literals, names of earlier constants, + - * // % ** and unary minus are understood, so a
# call or an attribute (`__import__('os').getpid()`) is simply not a constant.
_BIN_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: pow,
}
_MAX_MAGNITUDE = 2**64  # far above any tensor size; also keeps `10 ** 10 ** 9` from running


class _NotConstant(Exception):
    pass


def _eval_int(node: ast.expr, env: dict[str, int]) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:  # bools and floats excluded
        value = node.value
    elif isinstance(node, ast.Name) and node.id in env:
        value = env[node.id]
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = -_eval_int(node.operand, env)
    elif isinstance(node, ast.BinOp) and type(node.op) in _BIN_OPS:
        left, right = _eval_int(node.left, env), _eval_int(node.right, env)
        if isinstance(node.op, ast.Pow) and (right < 0 or right * max(abs(left).bit_length() - 1, 0) > 64):
            raise _NotConstant  # a float, or a number too large to be a size
        try:
            value = _BIN_OPS[type(node.op)](left, right)
        except ZeroDivisionError as exc:
            raise _NotConstant from exc
    else:
        raise _NotConstant
    if abs(value) > _MAX_MAGNITUDE:
        raise _NotConstant
    return value


@dataclass(frozen=True)
class _Slot:
    """One integer a module-level constant holds: `M`, or `input_shape[0]` inside a tuple."""

    name: str
    base: str  # the module-level name it belongs to
    value: int
    node: ast.expr
    # Built from literals alone, so it may be rewritten. A derived one (`N = M * 2`,
    # `bias_shape = (out_channels, 1, 1)`) is never rewritten: it is recomputed from the
    # constants it reads when the fitted source runs, so shapes stay consistent.
    independent: bool


def _leaves(name: str, base: str, node: ast.expr, env: dict[str, int], first: bool) -> list[_Slot]:
    if isinstance(node, ast.Tuple | ast.List):
        return [s for i, elt in enumerate(node.elts) for s in _leaves(f"{name}[{i}]", base, elt, env, first)]
    try:
        value = _eval_int(node, env)
    except (_NotConstant, RecursionError):
        return []
    has_names = any(isinstance(n, ast.Name) for n in ast.walk(node))
    return [_Slot(name, base, value, node, first and not has_names)]


def _assignments(stmt: ast.stmt) -> list[tuple[str, ast.expr, bool]] | None:
    """(name, value, first) for each name a plain assignment binds; None for other statements.
    In `height = width = 256` both names share one literal: the first owns it, the others follow."""
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return [(stmt.target.id, stmt.value, True)]
    if not isinstance(stmt, ast.Assign):
        return None
    pairs = []
    for i, target in enumerate(stmt.targets):
        if isinstance(target, ast.Name):
            pairs.append((target.id, stmt.value, i == 0))
        elif (isinstance(target, ast.Tuple | ast.List) and isinstance(stmt.value, ast.Tuple | ast.List)
              and len(target.elts) == len(stmt.value.elts) and all(isinstance(t, ast.Name) for t in target.elts)):
            pairs += [(t.id, v, i == 0) for t, v in zip(target.elts, stmt.value.elts, strict=True)]
        else:
            return None
    return pairs


def _rebound(stmt: ast.stmt) -> set[str]:
    """Module-level names a statement we do not read may (re)bind."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {stmt.name}
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names}
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _slots(source: str) -> list[_Slot]:
    env: dict[str, int] = {}
    slots: dict[str, _Slot] = {}
    for stmt in ast.parse(source).body:
        pairs = _assignments(stmt)
        if pairs is None:
            for name in _rebound(stmt):  # its value is unknown from here on
                env.pop(name, None)
                slots = {k: s for k, s in slots.items() if s.base != name}
            continue
        found = [_leaves(name, name, node, env, first) for name, node, first in pairs]
        for (name, _node, _first), leaves in zip(pairs, found, strict=True):
            slots = {k: s for k, s in slots.items() if s.base != name}  # the last assignment wins
            slots.update((s.name, s) for s in leaves)
            whole = [s for s in leaves if s.name == name]
            if whole:
                env[name] = whole[0].value
            else:
                env.pop(name, None)
    return list(slots.values())


def int_constants(source: str) -> dict[str, int]:
    """Every integer a module-level constant holds, derived ones and tuple elements included
    (`input_shape[0]`); bools, floats and anything not built from int literals excluded."""
    return {s.name: s.value for s in _slots(source)}


def _line_starts(data: bytes) -> list[int]:
    return [0] + [m.end() for m in re.finditer(rb"\r\n|\r|\n", data)]


def with_constants(source: str, values: dict[str, int]) -> str:
    """The source with the named independent constants written as new int literals; derived
    constants are left as expressions, so they follow. Unchanged values keep their text."""
    data = source.encode()  # ast columns count UTF-8 bytes
    starts = _line_starts(data)
    edits = []
    for s in _slots(source):
        if s.independent and s.name in values and values[s.name] != s.value:
            begin = starts[s.node.lineno - 1] + s.node.col_offset
            end = starts[s.node.end_lineno - 1] + s.node.end_col_offset
            edits.append((begin, end, str(values[s.name]).encode()))
    for begin, end, text in sorted(edits, reverse=True):
        data = data[:begin] + text + data[end:]
    return data.decode()


def exec_task(source: str, filename: str = "<task>") -> types.ModuleType:
    """Execute a task source as a fresh module (registered so pickling and dataclasses work)."""
    module = types.ModuleType(f"evokernel_task_{next(_module_counter)}")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except Exception as exc:
        raise TaskProbeError(f"executing the task failed: {type(exc).__name__}: {exc}") from exc
    for needed in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, needed):
            raise TaskProbeError(f"the task defines no {needed}")
    return module


@dataclass
class Probe:
    """Shapes and costs of one task at one set of sizes, seen on the meta device."""

    inputs: list[Any]
    init_inputs: list[Any]
    params: dict[str, tuple[list[int], torch.dtype]]
    outputs: list[torch.Tensor] | None
    flops: int
    forward_error: str | None = None
    tensor_bytes: int = field(default=0)

    def shape_key(self) -> tuple:
        shapes = tuple(tuple(t.shape) if isinstance(t, torch.Tensor) else None for t in self.inputs)
        return shapes, tuple(sorted((k, tuple(v[0])) for k, v in self.params.items()))


def as_output_list(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def probe(module: types.ModuleType) -> Probe:
    """Build inputs, the model and (where meta kernels exist) the outputs, on meta."""
    torch.manual_seed(0)
    try:
        with torch.device("meta"):
            inputs = list(module.get_inputs())
            init_inputs = list(module.get_init_inputs())
            model = module.Model(*init_inputs)
    except Exception as exc:
        raise TaskProbeError(f"get_inputs/get_init_inputs/Model failed on the meta device: {type(exc).__name__}: {exc}") from exc
    params = {n: (list(p.shape), p.dtype) for n, p in itertools.chain(model.named_parameters(), model.named_buffers())}
    outputs, flops, error = None, 0, None
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            outputs = as_output_list(model(*inputs))
        flops = int(counter.get_total_flops())
    except Exception as exc:  # ops without meta kernels, data-dependent shapes
        error = f"{type(exc).__name__}: {exc}"
    return Probe(inputs, init_inputs, params, outputs, flops, error, tensor_bytes(inputs, params, outputs))


def tensor_bytes(inputs: list[Any], params: dict[str, tuple[list[int], torch.dtype]],
                 outputs: list[torch.Tensor] | None) -> int:
    """Bytes of inputs, parameters and buffers, and outputs (taken as large as the largest
    input when forward could not run on meta)."""
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    total = sum(_nbytes(t) for t in tensors)
    total += sum(int(torch.Size(s).numel()) * torch.empty((), dtype=d).element_size() for s, d in params.values())
    total += sum(_nbytes(t) for t in outputs) if outputs is not None else max((_nbytes(t) for t in tensors), default=0)
    return total


def try_sizes(source: str, values: dict[str, int], before: Probe, filename: str) -> Probe | None:
    """The probe at these values, or None when they break the task or a forward that ran."""
    try:
        after = probe(exec_task(with_constants(source, values), filename))
    except TaskProbeError:
        return None
    return None if after.outputs is None and before.outputs is not None else after


def size_constants(source: str, filename: str = "<task>") -> dict[str, int]:
    """The independent constants whose value feeds an input or parameter shape, with their values.

    Doubling one alone may break forward: a broadcast 1 (`bias_shape = (C, 1, 1)`) is then no
    size, but a size tied to an equal one (HingeLoss broadcasts `(batch_size,)` against
    `input_shape = (32768,)` with both 32768) is, if doubling the equal ones together works."""
    base = probe(exec_task(source, filename))
    # a 1 inside a shape tuple is a broadcast placeholder that halving cannot shrink: left out
    slots = [s for s in _slots(source) if s.independent and s.value > 0 and (s.value > 1 or s.name == s.base)]
    sizes = {}
    for slot in slots:
        changed = try_sizes(source, {slot.name: slot.value * 2}, base, filename)
        if changed is None and slot.value > 1:
            changed = try_sizes(source, {s.name: s.value * 2 for s in slots if s.value == slot.value}, base, filename)
        if changed is not None and changed.shape_key() != base.shape_key():
            sizes[slot.name] = slot.value
    return sizes


@dataclass
class Fit:
    source: str  # the task source with the sizes used
    sizes: dict[str, int]  # every size constant, as used
    original: dict[str, int]
    probe: Probe
    shrunk: bool


def within(p: Probe, max_bytes: int, max_gflop: float) -> bool:
    return p.tensor_bytes <= max_bytes and p.flops <= max_gflop * 1e9


def fit_sizes(source: str, max_bytes: int, max_gflop: float, min_dim: int = 8, filename: str = "<task>") -> Fit:
    """Halve the largest size constant until the task fits the budget (or nothing shrinks).

    When halving it alone breaks the task, the sizes equal to it are halved together (they
    are tied, see size_constants) and stay grouped; if that breaks too, it is left as is."""
    original = size_constants(source, filename)
    sizes = dict(original)
    current = probe(exec_task(source, filename))
    frozen: set[str] = set()
    groups: dict[str, tuple[str, ...]] = {}
    while not within(current, max_bytes, max_gflop):
        shrinkable = [n for n, v in sizes.items() if n not in frozen and v // 2 >= min_dim]
        if not shrinkable:
            break
        name = max(shrinkable, key=lambda n: sizes[n])
        equal = tuple(n for n in shrinkable if sizes[n] == sizes[name])
        attempts = [groups[name]] if name in groups else [(name,)] + ([equal] if len(equal) > 1 else [])
        for names in attempts:
            trial = dict(sizes, **{n: sizes[n] // 2 for n in names})
            trial_probe = try_sizes(source, trial, current, filename)
            if trial_probe is not None:
                sizes, current = trial, trial_probe
                groups.update((n, names) for n in names if len(names) > 1)
                break
        else:
            frozen.update(attempts[0])  # a smaller size breaks the task (a divisibility constraint)
    return Fit(with_constants(source, sizes), sizes, original, current, sizes != original)
