"""The operator's own verified kernel of another backend as an option of an Ascend C draft's
decision (issue 64, point 3): the bank lists the operator's fastest feasible C kernel where the
request asks for it (SlotRequest.cross_backend), the decision values it like any option, its
outcome counts for it, and a draft shows it pinned as it is, said to be the formula to carry."""

from __future__ import annotations

from actors.briefing import task_brief
from actors.context import draft_context, slot_request
from memory_actor.bank import MemoryBank
from memory_actor.items import ItemVerdict, MemoryItem
from memory_actor.messages import RetrievalRequest, ValueUpdate
from memory_actor.slots import CROSS_BACKEND, SlotOutcome, SlotRequest, stat_key
from npu_pool.backends import get_backend
from tests.memory_actor.conftest import near, unit_vectors

QUERY = unit_vectors(1, seed=11)[0]
TWIN_SHAPE = "input float32[2], output float32[2]; tiling: size 0.0"


def c_kernel(task: str, latency: float, seed: int, gate: str = "ok") -> MemoryItem:
    return MemoryItem(kind="trace", backend="cpu", task_id=task, stage="draft", content=f"// {task} {latency}\n",
                      task_signature="extern \"C\" void kernel(const float* x, float* out, int64_t x_d0);",
                      verdict=ItemVerdict(gate=gate, latency_ms=latency if gate == "ok" else None),
                      tags=["family:elementwise", "shape:c"], embedding=near(QUERY, 0.6, seed=seed).tolist())


def request(cross: str | None, start: str | None = None) -> RetrievalRequest:
    return RetrievalRequest(query="relu", stage="draft", backend="npu-twin", query_embedding=QUERY.tolist(),
                            family="elementwise", shape=TWIN_SHAPE,
                            slot=SlotRequest(task_id="4_ReLU", family="elementwise", shape=TWIN_SHAPE,
                                             cross_backend=cross, start=start))


def test_the_bank_offers_the_operators_fastest_c_kernel_to_an_ascend_c_draft(memory_config):
    bank = MemoryBank(memory_config(retrieval="value", shipped_rates=False))
    slow, fast, failed, other = bank.add([c_kernel("4_ReLU", 2.0, 1), c_kernel("4_ReLU", 0.5, 2),
                                          c_kernel("4_ReLU", 0.1, 3, gate="correctness"), c_kernel("7_Sigmoid", 0.2, 4)])
    offered = {c.key: c.option for c in bank.retrieve(request("cpu")).slot.candidates}
    assert offered == {"generic": "generic", fast: CROSS_BACKEND}  # the fastest feasible one of this operator only
    assert CROSS_BACKEND in {o.key for o in bank.retrieve(request("cpu")).slot.options}
    assert {c.key for c in bank.retrieve(request(None)).slot.candidates} == {"generic"}  # not asked: not offered
    started = bank.retrieve(request("cpu", start=CROSS_BACKEND))
    assert (started.slot.chosen, started.slot.option) == (fast, CROSS_BACKEND) and started.slot_item.id == fast
    # a start names options in preference order: the first the bank offers is shown
    preferred = bank.retrieve(request("cpu", start=f"rung, {CROSS_BACKEND}"))  # no rung in this bank
    assert (preferred.slot.chosen, preferred.slot.reason) == (fast, "start")
    assert bank.retrieve(request(None, start=CROSS_BACKEND)).slot.reason != "start"  # not offered: the decision's
    bank.update(ValueUpdate(update_id="u1", shown_ids=[fast], stage="draft", reward=1.0,
                            slot=SlotOutcome(backend="npu-twin", family="elementwise", context="fresh", key=fast,
                                             kind="kernel", option=CROSS_BACKEND)))
    assert bank.slots.get(stat_key("npu-twin", "elementwise", "fresh", CROSS_BACKEND)) == (1, 1)
    # the draft shows it pinned, as it is, with what to take from it
    brief = task_brief(_relu_task(), get_backend("npu-twin"), "kernel")
    shown = draft_context(started, brief, None)
    assert shown.exemplar is None and shown.pinned is not None and shown.pinned.id == fast
    assert shown.pinned.content.startswith("// 4_ReLU 0.5")
    assert "carry its formula" in shown.pinned.summary and shown.in_slot.id == fast
    for unused in (slow, failed, other):
        assert unused not in {c.key for c in started.slot.candidates}
    bank.close()


def test_only_ascend_c_drafts_ask_for_it():
    twin = task_brief(_relu_task(), get_backend("npu-twin"), "kernel")
    cpu = task_brief(_relu_task(), get_backend("cpu"), "kernel")
    assert slot_request(twin, retry=False, cross_backend=True).cross_backend == "cpu"
    assert slot_request(twin, retry=False).cross_backend is None  # episode.cross_backend_kernels off
    assert slot_request(cpu, retry=False, cross_backend=True).cross_backend is None


def _relu_task():
    from tests.npu_pool.harness_support import fixture_task

    return fixture_task("huge_relu")
