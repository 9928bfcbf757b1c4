"""A scalar kernel's elementwise formula read into a tree (actors/formula_tree.py) and lowered into
vector instructions (actors/formula_lowering.py): what the first rung's loops write is read
exactly, anything else refused, and every lowering's sequence reads its operands in its first
instruction only, so destinations can be reused."""

from __future__ import annotations

import pytest

from actors.formula_lowering import Lowering, normalized
from actors.formula_tree import Unsupported, names, read_formula

X, Y = ("in", "xGm"), ("in", "yGm")


@pytest.mark.parametrize("body, tree", [
    ("const float v = xGm.GetValue(i);\n outGm.SetValue(i, expf(v) - 1.0f);",
     ("bin", "-", ("call", "exp", X), ("num", 1.0))),
    ("float v = xGm.GetValue(i); v = v * v; v *= xGm.GetValue(i); outGm.SetValue(i, v);",
     ("bin", "*", ("bin", "*", X, X), X)),
    ("outGm.SetValue(i, std::max(0.0f, std::min(6.0f, static_cast<float>(xGm.GetValue(i)))));",
     ("call", "max", ("num", 0.0), ("call", "min", ("num", 6.0), X))),
    ("const float d = xGm.GetValue(i) - yGm.GetValue(i); // the difference\n outGm.SetValue(i, d < 0.0f ? -d : d);",
     ("sel", ("cmp", "<", ("bin", "-", X, Y), ("num", 0.0)), ("neg", ("bin", "-", X, Y)), ("bin", "-", X, Y))),
    ("outGm.SetValue(i, (float)xGm.GetValue(i) / bound);", ("bin", "/", X, ("name", "bound"))),
])
def test_the_first_rung_s_statements_are_read_into_a_tree(body, tree):
    assert read_formula(body, "i") == ("outGm", tree)


@pytest.mark.parametrize("body", [
    "outGm.SetValue(i, xGm.GetValue(i + 1));",                     # another element
    "outGm.SetValue(i, xGm.GetValue(i) * (float)i);",               # the index itself
    "if (xGm.GetValue(i) > 0.0f) outGm.SetValue(i, 1.0f);",         # control flow
    "outGm.SetValue(i, myHelper(xGm.GetValue(i)));",                # a function of the kernel's own
    "outGm.SetValue(i, (float)((int)xGm.GetValue(i) % 2));",       # integer arithmetic
    "const float v = xGm.GetValue(i);",                              # nothing written
    "outGm.SetValue(i, 1.0f); outGm.SetValue(i, 2.0f);",            # written twice
    "other = xGm.GetValue(i); outGm.SetValue(i, other);",           # a name the loop does not own
])
def test_what_the_subset_does_not_hold_is_refused(body):
    with pytest.raises(Unsupported):
        read_formula(body, "i")


def test_a_scalar_from_outside_the_loop_is_named():
    _, tree = read_formula("outGm.SetValue(i, alpha * xGm.GetValue(i) + shift);", "i")
    assert names(tree) == {"alpha", "shift"}


@pytest.mark.parametrize("tree, kept", [
    (("sel", ("cmp", ">", X, ("num", 0.0)), X, ("num", 0.0)), ("call", "max", X, ("num", 0.0))),
    (("sel", ("cmp", "<", X, ("num", 6.0)), X, ("num", 6.0)), ("call", "min", X, ("num", 6.0))),
    (("sel", ("cmp", ">=", X, ("num", 0.0)), X, ("neg", X)), ("call", "abs", X)),
    (("sel", ("cmp", ">", X, ("num", 0.0)), X, ("bin", "*", ("num", 0.1), X)), ("call", "leaky", X, ("num", 0.1))),
    (("call", "pow", X, ("num", 3.0)), ("bin", "*", ("bin", "*", X, X), X)),
])
def test_ternaries_and_powers_become_what_the_vector_unit_computes(tree, kept):
    assert normalized(tree) == kept


@pytest.mark.parametrize("tree", [
    ("sel", ("cmp", ">", X, ("num", 0.0)), ("num", 1.0), ("num", -1.0)),  # a sign: needs a mask
    ("sel", ("cmp", "==", X, Y), X, Y),
    ("call", "pow", X, ("name", "p")),  # an exponent the system cannot see
])
def test_ternaries_and_powers_it_cannot_lower_are_refused(tree):
    with pytest.raises(Unsupported):
        Lowering(count="n", leaf_tiles={"xGm": "v", "yGm": "w"}).lower(tree, "v")


def test_lowering_reuses_dead_scratch_and_writes_the_result_last():
    _, tree = read_formula("const float v = xGm.GetValue(i);\n"
                           "outGm.SetValue(i, bound * (1.0f - 2.0f / (expf(2.0f * v / bound) + 1.0f)));", "i")
    lowering = Lowering(count="n", leaf_tiles={"xGm": "v"})
    lines = [line.split("  //")[0] for line in lowering.lower(tree, "v")]
    assert lines == ["Muls(scratch0, v, 2.0f, n);", "Muls(scratch0, scratch0, 1.0f / bound, n);",
                     "Exp(scratch0, scratch0, n);", "Adds(scratch0, scratch0, 1.0f, n);",
                     "Reciprocal(scratch0, scratch0, n);", "Muls(scratch0, scratch0, 2.0f, n);",
                     "Muls(scratch0, scratch0, -1.0f, n);", "Adds(scratch0, scratch0, 1.0f, n);",
                     "Muls(v, scratch0, bound, n);"]
    assert lowering.scratch == ["scratch0"]


def test_a_value_read_twice_keeps_its_tile_until_its_last_reader():
    _, tree = read_formula("const float e = expf(xGm.GetValue(i));\n outGm.SetValue(i, e * e + e);", "i")
    lines = [line.split("  //")[0] for line in Lowering(count="n", leaf_tiles={"xGm": "v"}).lower(tree, "v")]
    assert lines == ["Exp(scratch0, v, n);", "Mul(scratch1, scratch0, scratch0, n);", "Add(v, scratch1, scratch0, n);"]


def test_tanh_is_composed_since_the_twin_has_no_tanh_instruction():
    _, tree = read_formula("outGm.SetValue(i, tanhf(xGm.GetValue(i)));", "i")
    lines = Lowering(count="n", leaf_tiles={"xGm": "v"}).lower(tree, "v")
    assert [line.split("(")[0] for line in lines] == ["Muls", "Exp", "Adds", "Reciprocal", "Muls", "Adds"]
    assert lines[0].startswith("Muls(v, v, -2.0f, n);") and all("(v, v," in line for line in lines)
