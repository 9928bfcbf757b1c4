"""The agent's side of the worked-example slot: what it asks the memory, what a draft shows of
its answer, and what it reports back as shown (actors/context.py)."""

from __future__ import annotations

from actors.briefing import family_example, family_rung
from actors.context import draft_context, rung_fits, slot_outcome, slot_request, trace_tags
from actors.messages import CandidateFormat, TaskBrief
from actors.renaming import rename_identifiers
from actors.signature_shape import signature_shape
from memory_actor.items import MemoryItem
from memory_actor.messages import Retrieval
from memory_actor.seeding import rung_items
from memory_actor.slots import SlotChoice

RELU = "class Model(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
MATMUL = "class Model(nn.Module):\n    def forward(self, a, b):\n        return torch.matmul(a, b)\n"
SIG = ('extern "C" void kernel(\n    const float* x,  // input\n    float* out,      // output\n'
       '    double negative_slope,\n    int64_t x_d0     // size\n);')


SIG_2D = ('extern "C" void kernel(\n    const float* x,  // input, float32 [x_d0 x x_d1]\n'
          '    float* out,      // output, float32 [out_d0 x out_d1]\n'
          '    int64_t x_d0, int64_t x_d1, int64_t out_d0, int64_t out_d1\n);')


def test_the_request_names_family_shape_context_and_example():
    brief = TaskBrief(task_id="19_ReLU", backend="cpu", reference_source=RELU, signature=SIG_2D,
                      example=family_example("cpu", "elementwise", SIG_2D, "kernel"))
    fresh, retry = slot_request(brief, retry=False), slot_request(brief, retry=True)
    shape = "input float32[2], output float32[2], size 0.0, size 0.1, size 1.0, size 1.1"
    assert (fresh.family, fresh.shape, fresh.context, fresh.example) == (
        "elementwise", shape, "fresh", "example_elementwise")
    assert retry.context == "retry" and fresh.task_id == "19_ReLU"
    assert trace_tags(brief) == ["family:elementwise", f"shape:{shape}"]
    matmul = slot_request(TaskBrief(task_id="mm", backend="cpu", reference_source=MATMUL, signature=SIG_2D,
                                    example=family_example("cpu", "matmul", SIG_2D, "kernel")), False)
    assert matmul.family == "matmul" and matmul.example == "example_matmul"


def test_the_family_example_is_an_option_only_where_its_signature_maps_onto_the_tasks():
    # LeakyReLU takes a scalar the bundle's elementwise example (log1p|x|, 2-d) has no place for:
    # the prompt could not show it in the task's terms, so the memory must not choose it
    assert family_example("cpu", "elementwise", SIG, "kernel") is None
    brief = TaskBrief(task_id="9_LeakyReLU", backend="cpu", reference_source=RELU, signature=SIG,
                      example=family_example("cpu", "elementwise", SIG, "kernel"))
    request = slot_request(brief, retry=False)
    assert (request.family, request.shape, request.example) == ("elementwise", signature_shape(SIG), None)
    assert request.shape == "input float32[1], output float32[0], scalar double, size 0.0"
    # a ModelNew task has no signature: its examples are shown as they are
    assert family_example("cpu", "elementwise", None, "modelnew") == "example_elementwise"


def _values_brief(signature: str | None, candidate_format: CandidateFormat = "kernel") -> TaskBrief:
    """A 2-d elementwise task whose input is called `values` (the rung's task calls it `x`)."""
    return TaskBrief(task_id="t1_Log1pAbsValues", backend="cpu", reference_source=RELU, signature=signature,
                     candidate_format=candidate_format,
                     example=family_example("cpu", "elementwise", signature, candidate_format),
                     rung=family_rung("cpu", "elementwise", signature, candidate_format))


def test_the_first_rung_is_a_fact_of_the_brief_where_its_signature_maps_onto_the_tasks():
    rung = rung_items("cpu")["elementwise"]
    names = {"x": "values", "x_d0": "values_d0", "x_d1": "values_d1"}
    signature = rename_identifiers(rung.task_signature, names)
    assert signature is not None and "const float* values" in signature
    brief = _values_brief(signature)
    assert (brief.rung, brief.example) == ("rung_elementwise", "example_elementwise")
    request = slot_request(brief, retry=False, start_from_rung=rung_fits(brief))
    assert (request.rung, request.example, request.start) == ("rung_elementwise", "example_elementwise", "rung")
    assert slot_request(brief, retry=False).start is None
    # LeakyReLU's scalar has no place in the rung's signature: no option, no start
    assert family_rung("cpu", "elementwise", SIG, "kernel") is None
    leaky = TaskBrief(task_id="9_LeakyReLU", backend="cpu", reference_source=RELU, signature=SIG,
                      rung=family_rung("cpu", "elementwise", SIG, "kernel"))
    assert not rung_fits(leaky) and slot_request(leaky, retry=False).rung is None
    # cuda's bundle has no rungs; a ModelNew task keeps the rung as an option (like the example),
    # but has no signature to show it in, so a draft never starts from it
    assert family_rung("cuda", "elementwise", signature, "kernel") is None
    modelnew = _values_brief(None, "modelnew")
    assert modelnew.rung == "rung_elementwise" and not rung_fits(modelnew)


def test_a_rung_in_the_slot_is_shown_in_the_tasks_names_as_the_worked_example_and_pinned():
    rung = rung_items("cpu")["elementwise"]
    names = {"x": "values", "x_d0": "values_d0", "x_d1": "values_d1"}
    signature = rename_identifiers(rung.task_signature, names)
    retrieval = Retrieval(retrieval_id="r", stage="draft", mode="value", slot_item=rung,
                          slot=SlotChoice(family="elementwise", context="fresh", chosen=rung.id, kind="rung",
                                          option="rung", reason="start"))
    shown = draft_context(retrieval, _values_brief(signature), None)
    assert shown.pinned is not None and shown.pinned.id == rung.id and shown.in_slot is shown.pinned
    assert shown.items == []  # pinned, like the family's example: not a context item too
    assert "const float* values" in shown.pinned.content and "x[i]" not in shown.pinned.content
    assert shown.pinned.content == rename_identifiers(rung.content, names)
    assert shown.exemplar is not None and shown.exemplar.item_id == rung.id
    assert shown.exemplar.code == shown.pinned.content and shown.exemplar.task.signature == signature
    assert shown.exemplar.task.task_id == rung.task_id  # the rung's own task, in the task's signature
    assert shown.renamed == {rung.id: names}
    assert rung.content != shown.pinned.content  # the bank's item is unchanged


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
