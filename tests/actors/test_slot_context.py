"""The agent's side of the worked-example slot: what it asks the memory, and what it reports
back as shown (actors/context.py)."""

from __future__ import annotations

from actors.context import slot_outcome, slot_request, trace_tags
from actors.families import signature_shape
from actors.messages import TaskBrief
from memory_actor.items import MemoryItem
from memory_actor.messages import Retrieval
from memory_actor.slots import SlotCandidate, SlotChoice

RELU = "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
MATMUL = "class Model(nn.Module):\n    def forward(self, a, b):\n        return torch.matmul(a, b)\n"
SIG = ('extern "C" void kernel(\n    const float* x,  // input\n    float* out,      // output\n'
       '    double negative_slope,\n    int64_t x_d0     // size\n);')


def test_the_request_names_family_shape_context_and_example():
    brief = TaskBrief(task_id="9_LeakyReLU", backend="cpu", reference_source=RELU, signature=SIG)
    fresh, retry = slot_request(brief, retry=False), slot_request(brief, retry=True)
    assert (fresh.family, fresh.shape, fresh.context, fresh.example) == (
        "elementwise", "const float*,float*,double,int64_t", "fresh", "example_elementwise")
    assert retry.context == "retry" and fresh.task_id == "9_LeakyReLU"
    assert trace_tags(brief) == ["family:elementwise", "shape:const float*,float*,double,int64_t"]
    matmul = slot_request(brief.model_copy(update={"reference_source": MATMUL}), retry=False)
    assert matmul.family == "matmul" and matmul.example == "example_matmul"


def test_signature_shapes_ignore_names_and_comments_not_types():
    assert signature_shape('void kernel(const float* a, float *b, int64_t n)') == signature_shape(
        'void kernel(const float *x,  // in\n float* out, int64_t count)')
    assert signature_shape('void kernel(const float* a, float* b)') != signature_shape('void kernel(float* a, float* b)')
    assert signature_shape('void kernel(const float* a, int64_t* b)') != signature_shape(
        'void kernel(const float* a, float* b)')
    assert signature_shape(None) == ""


def test_what_the_slot_showed_is_what_reached_the_prompt():
    def retrieval(kind: str, chosen: str, ranked: bool = False) -> Retrieval:
        items = [MemoryItem(id="lesson", kind="experience", backend="cpu", content="x")] if ranked else []
        return Retrieval(retrieval_id="r", stage="draft", mode="value", items=items,
                         slot=SlotChoice(family="elementwise", context="fresh", chosen=chosen, kind=kind, ranked=ranked))

    shown = slot_outcome(retrieval("kernel", "k1", ranked=True), "cpu", ["api", "k1", "lesson"])
    assert (shown.key, shown.kind, shown.family, shown.context, shown.ranked) == (
        "k1", "kernel", "elementwise", "fresh", True)
    # cut by the budget (shown as a context item) or not shown at all: the generic example was;
    # every ranked item cut: the draft showed none
    cut = slot_outcome(retrieval("kernel", "k1", ranked=True), "cpu", ["api"])
    assert (cut.key, cut.ranked) == ("generic", False)
    assert slot_outcome(retrieval("example", "e1"), "cpu", ["api", "e1"]).kind == "example"
    assert slot_outcome(retrieval("generic", "generic"), "cpu", ["api"]).kind == "generic"
    assert slot_outcome(Retrieval(retrieval_id="r", stage="draft", mode="value"), "cpu", []) is None


def test_the_outcome_names_the_examples_declared_option_and_the_task():
    """A rung (an example whose bundle entry declares its own option) is credited under that option;
    the task goes along, so a fresh bare draft also counts for the operator's own cold rate."""
    choice = SlotChoice(family="elementwise", context="fresh", task_id="4_ReLU", chosen="r1", kind="example",
                        candidates=[SlotCandidate(key="generic", kind="generic"),
                                    SlotCandidate(key="r1", kind="example", option="rung")])
    shown = slot_outcome(Retrieval(retrieval_id="r", stage="draft", mode="value", slot=choice), "npu-twin", ["r1"])
    assert (shown.option, shown.task_id) == ("rung", "4_ReLU")
    cut = slot_outcome(Retrieval(retrieval_id="r", stage="draft", mode="value", slot=choice), "npu-twin", [])
    assert (cut.option, cut.task_id) == ("generic", "4_ReLU")
