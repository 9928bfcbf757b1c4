"""A rendered kernel signature read back, and its shape (actors/signature_shape.py): the words
two tasks' signatures are compared by, on the signatures the backends really render."""

from __future__ import annotations

from pathlib import Path

from actors.signature_shape import entry_declaration, read_signature, renaming, signature_shape
from npu_pool.backends import get_backend
from npu_pool.tasks.spec import load_task
from tests.npu_pool.harness_support import SMALL_BYTES

SUITE = Path(__file__).resolve().parents[2] / "suites" / "cpu" / "level1"


def rendered(backend: str, task: str) -> str:
    spec = load_task(SUITE / f"{task}.py", max_bytes=SMALL_BYTES)
    return get_backend(backend).render_kernel_signature(spec.kernel_signature)


def test_each_format_is_read_in_the_same_words():
    # Sum over `dim` of a 3-d tensor, keeping the axis: a constructor scalar beside the sizes
    tensors = "input float32[3], output float32[3]"
    sizes = "size 0.0, size 0.1, size 0.2, size 1.0, size 1.1, size 1.2"
    assert signature_shape(rendered("cpu", "14_SumOverDim")) == f"{tensors}, scalar int64_t, {sizes}"
    assert signature_shape(rendered("cuda", "14_SumOverDim")) == f"{tensors}, scalar int64_t, {sizes}, stream"
    # Ascend C: the addresses, then the KernelTiling fields (where the sizes and scalars are)
    assert signature_shape(rendered("npu-twin", "14_SumOverDim")) == (
        f"{tensors}, workspace, tiling; tiling: scalar int64_t, {sizes}, block_dim")
    entry = read_signature(rendered("npu-twin", "14_SumOverDim"))
    assert entry is not None and entry.function == "kernel"
    assert [a.name for a in entry.args] == ["x", "out", "workspace", "tiling"]
    assert [f.name for f in entry.fields] == ["dim", "x_d0", "x_d1", "x_d2", "out_d0", "out_d1", "out_d2", "block_dim"]


def test_operators_of_one_shape_map_name_for_name_and_others_do_not():
    # two 2-d elementwise operators: one shape; the renaming is the identity (both call it x)
    relu, sigmoid = rendered("npu-twin", "4_ReLU"), rendered("npu-twin", "7_Sigmoid")
    assert signature_shape(relu) == signature_shape(sigmoid)
    names = renaming(relu, sigmoid)
    assert names is not None and all(old == new for old, new in names.names.items())
    assert names.fields == {"x_d0", "x_d1", "out_d0", "out_d1", "block_dim"}
    # a matrix-vector product takes two inputs: another shape, in every format
    for backend in ("cpu", "cuda", "npu-twin"):
        assert renaming(rendered(backend, "4_ReLU"), rendered(backend, "27_MatVec")) is None


def test_no_signature_no_shape():
    assert signature_shape(None) == signature_shape("") == signature_shape("not a declaration") == ""
    assert renaming(None, 'extern "C" void kernel(const float* x, float* out);') is None


def test_a_rendered_entry_reads_as_a_declaration_in_either_form():
    # the Ascend C entry is rendered as the definition to fill: as a declaration it ends at its `)`
    definition = rendered("npu-twin", "4_ReLU")
    assert definition.rstrip().endswith("}")
    declaration = entry_declaration(definition)
    assert declaration.endswith(");") and "{\n" not in declaration[declaration.rfind('extern "C"'):]
    assert read_signature(declaration) == read_signature(definition)
    # a C declaration is itself; text without a closed entry is left as it is
    c_entry = rendered("cpu", "4_ReLU")
    assert entry_declaration(c_entry) == c_entry.rstrip()
    assert entry_declaration("void kernel(int x") == "void kernel(int x"
