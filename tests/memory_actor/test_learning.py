"""A memory that learns the right thing (issue 13): failed code is never an exemplar, priors and a
baseline keep uniform failures from ranking "newest first", credit goes to exactly what the
model was shown, and provenance credit flows back along the chain of start points."""

import zlib

import lancedb
import pyarrow as pa
import pytest

from memory_actor.bank import MemoryBank
from memory_actor.disk.store import LOG_SCHEMA
from memory_actor.embeddings import MINILM_DIM
from memory_actor.items import ItemVerdict, MemoryItem, item_schema
from memory_actor.messages import RetrievalRequest, ValueUpdate
from memory_actor.seeding import seed_items
from memory_actor.values import RewardShaper, q_update

from .conftest import near, unit_vectors

QUERY = unit_vectors(1, seed=42)[0]
OK, FAILED = ItemVerdict(gate="ok", latency_ms=1.0), ItemVerdict(gate="compile", reason="error: no member")


def _item(item_id, kind="experience", sim=0.5, **fields):
    return MemoryItem(id=item_id, kind=kind, backend="cpu", content=f"content of {item_id}",
                      embedding=near(QUERY, sim, seed=zlib.crc32(item_id.encode())).tolist(), **fields)


def _request(**fields):
    values = {"query": "", "stage": "draft", "backend": "cpu", "kinds": ["trace", "experience", "practice"], "n": 2,
              "query_embedding": QUERY.tolist(), "include_api": False}
    return RetrievalRequest(**{**values, **fields})


# -- A. verdict-aware recall ------------------------------------------------------------------------

def test_drafting_recall_never_returns_a_failed_trace(memory_config, minilm):
    bank = MemoryBank(memory_config(), embedder=minilm)
    softmax = "__global__ void softmax_kernel(const float* x, float* y, int rows, int cols) {{ {} }}"
    failed = [MemoryItem(kind="trace", backend="cpu", task_id=f"softmax{i}", content=softmax.format(f"/* v{i} */"),
                         summary="softmax kernel", verdict=FAILED) for i in range(8)]
    working = MemoryItem(kind="trace", backend="cpu", task_id="relu", content="void relu(float* x, int n) { }",
                         summary="relu kernel", verdict=OK)
    lesson = MemoryItem(kind="experience", backend="cpu", task_id="softmax0", summary="why it failed",
                        content="softmax failed at compile: float4 has no member named 'w'")
    bank.add(failed + [working, lesson])
    request = RetrievalRequest(query="softmax kernel over rows", stage="draft", backend="cpu",
                               kinds=["trace", "experience"], n=2, include_api=False)
    retrieval = bank.retrieve(request)
    # the failed traces are the items nearest the query, and none comes back: the pool (K = 6) is
    # filled from eligible items only, not cut down to them afterwards
    assert {item.id for item in retrieval.items} == {working.id, lesson.id}
    assert retrieval.pool_size == 2
    for stage in ("draft", "refine"):
        assert not any(item.kind == "trace" and item.verdict.gate != "ok"
                       for item in bank.retrieve(request.model_copy(update={"stage": stage, "n": 10})).items)
    # inspection can still ask for every trace
    anything = bank.retrieve(request.model_copy(update={"trace_verdicts": "any", "n": 10}))
    assert {item.id for item in failed} <= {item.id for item in anything.items}


# -- B. priors and the baseline -----------------------------------------------------------------------

def test_priors_come_from_config(memory_config, minilm):
    config = memory_config(q_init=0.05, q_init_seeded=0.45, q_init_trace_feasible=0.25, q_init_trace_failed=-0.35,
                           q_init_experience=-0.01)
    bank = MemoryBank(config, embedder=minilm)
    bank.add([_item("lesson"), _item("good", kind="trace", verdict=OK), _item("bad", kind="trace", verdict=FAILED),
              _item("unjudged", kind="trace"), _item("seeded", kind="practice", stage="seed"),
              _item("learned", kind="practice", stage="refine"), _item("chosen", q_draft=0.7, q_refine=0.6)])
    expected = {"lesson": -0.01, "good": 0.25, "bad": -0.35, "unjudged": -0.35, "seeded": 0.45, "learned": 0.05}
    for item_id, q in expected.items():
        item = bank.get(item_id)
        assert (item.q_draft, item.q_refine) == (q, q), item_id
    assert (bank.get("chosen").q_draft, bank.get("chosen").q_refine) == (0.7, 0.6)  # explicit values are kept
    bundle = bank.get(bank.add(seed_items("cpu", set()))[0])
    assert bundle.stage == "seed" and bundle.q_draft == 0.45
    # the priors are the config's, not constants: change them and a new item starts elsewhere
    other = MemoryBank(memory_config(q_init_experience=0.123, uri=config.uri + "-2"))
    assert other.get(other.add([_item("lesson2")])[0]).q_draft == 0.123


def _campaign_of_failures(bank, rounds):
    """Every attempt fails (-1); each leaves a new failed trace and a new lesson, all of them nearer
    the query than the seeded practices (the worst case for the seeds)."""
    for r in range(rounds):
        retrieval = bank.retrieve(_request(trace_verdicts="any"))
        bank.update(ValueUpdate(retrieval_id=retrieval.retrieval_id, shown_ids=retrieval.item_ids, stage="draft",
                                reward=-1.0))
        bank.add([_item(f"trace{r}", kind="trace", sim=0.9, verdict=FAILED), _item(f"lesson{r}", sim=0.9)])
    return [item.id for item in bank.retrieve(_request(trace_verdicts="any", n=len(bank.items)), record=False).items]


def test_uniform_failures_keep_seeded_items_above_new_failures(memory_config):
    seeded = [_item(f"seed{i}", kind="practice", sim=0.5, stage="seed") for i in range(2)]
    bank = MemoryBank(memory_config(recall_lambda=100, ranker="q"))  # the whole bank is the pool: this is about Q
    bank.add(seeded)
    ranking = _campaign_of_failures(bank, 12)
    assert ranking[:2] == ["seed0", "seed1"]
    assert set(ranking[2:14]) == {f"lesson{r}" for r in range(12)}  # lessons (0) above failed code (-0.2)
    assert set(ranking[14:]) == {f"trace{r}" for r in range(12)}
    assert bank.stats(disk=False).baselines["draft"] == pytest.approx(-1.0)
    # by hand: the first failure is a failure (baseline 0), after that -1 is what is expected (advantage 0)
    assert bank.get("seed0").q_draft == pytest.approx((0.3 + 0.2 * (-1 - 0.3)) * 0.8 ** 11)
    assert bank.get("seed0").visits_draft == 12

    # without the baseline every shown item sinks below the unshown ones: "least shown first"
    plain = MemoryBank(memory_config(recall_lambda=100, ranker="q", baseline=False, uri=bank.config.uri + "-plain"))
    plain.add([item.model_copy() for item in seeded])
    ranking = _campaign_of_failures(plain, 12)
    assert ranking[0] == "lesson11" and ranking.index("seed0") > ranking.index("lesson11")


def test_persisted_baseline_survives_reopening(memory_config):
    config = memory_config(fold_every_rows=4)  # the second half goes through a fold (meta), the rest the log
    bank = MemoryBank(config)
    ids = bank.add([_item(f"i{k}") for k in range(3)])
    rewards = [("draft", -1.0), ("draft", -1.0), ("refine", 0.4), ("draft", 1.0), ("refine", -0.2), ("draft", -1.0)]
    shaper = RewardShaper(config)
    for k, (stage, reward) in enumerate(rewards):
        if k == 3:
            bank.close()
            bank = MemoryBank(config)
        ack = bank.update(ValueUpdate(shown_ids=[ids[k % 3]], stage=stage, reward=reward))
        assert ack.advantage == pytest.approx(shaper.shape(stage, reward)[1])
    before = bank.stats(disk=False).baselines
    assert before == {stage: pytest.approx(b.mean) for stage, b in shaper.baselines.items()}
    reopened = MemoryBank(config)
    assert reopened.stats(disk=False).baselines == before
    assert reopened.shaper.baselines["draft"].count == 4
    ack = reopened.update(ValueUpdate(shown_ids=[ids[0]], stage="draft", reward=1.0))
    assert ack.advantage == pytest.approx(shaper.shape("draft", 1.0)[1])


# -- C. credit exactly the shown set ----------------------------------------------------------------------

def test_credit_goes_to_exactly_the_shown_set(memory_config):
    config = memory_config(baseline=False)
    bank = MemoryBank(config)
    bank.add([_item(f"i{k}", sim=0.9 - k / 20) for k in range(5)] + [_item("start", kind="trace", verdict=OK)])
    retrieval = bank.retrieve(_request(n=4, kinds=["experience"]))
    assert retrieval.item_ids == ["i0", "i1", "i2", "i3"]
    refs = retrieval.refs(["i0", "i2"])
    assert [(r.id, r.kind, r.q) for r in refs] == [("i0", "experience", 0.0), ("i2", "experience", 0.0)]
    assert refs[0].similarity == pytest.approx(0.9, abs=1e-5)
    # the budget cut i1 and i3: only i0, i2 and the start point reached the prompt
    shown = ["i0", "i2", "start", "no-such-item"]
    ack = bank.update(ValueUpdate(retrieval_id=retrieval.retrieval_id, shown_ids=shown, stage="draft", reward=1.0))
    assert ack.item_ids == ["i0", "i2", "start"] and ack.ignored_ids == ["no-such-item"]
    for item_id, q0 in (("i0", 0.0), ("i2", 0.0), ("start", 0.2)):
        assert bank.get(item_id).q_draft == pytest.approx(q_update(q0, 1.0, 0.2))
        assert bank.get(item_id).visits_draft == 1
    for item_id in ("i1", "i3", "i4"):
        assert bank.get(item_id).q_draft == 0.0 and bank.get(item_id).visits_draft == 0
    # an empty shown set credits nothing (but still counts as the stage's reward)
    assert bank.update(ValueUpdate(retrieval_id=retrieval.retrieval_id, shown_ids=[], stage="draft",
                                   reward=1.0)).item_ids == []
    assert bank.get("i1").visits_draft == 0
    with pytest.raises(ValueError, match="not both"):
        ValueUpdate(shown_ids=["i0"], item_ids=["i1"], stage="draft", reward=1.0)


# -- D. provenance --------------------------------------------------------------------------------------

def _chain(bank):
    """t1 <- t2 <- t3 <- t4 (parent first), each created with its own context; `shared` was in the
    contexts of both t2 and t3."""
    bank.add([_item(name) for name in ("c1", "c2", "c3", "c4", "shared")])
    bank.add([_item("t1", kind="trace", verdict=OK, context_ids=["c1"])])
    bank.add([_item("t2", kind="trace", verdict=OK, parent_id="t1", context_ids=["c2", "t1", "shared"])])
    bank.add([_item("t3", kind="trace", verdict=OK, parent_id="t2", context_ids=["c3", "t2", "shared"])])
    bank.add([_item("t4", kind="trace", verdict=OK, parent_id="t3", context_ids=["c4", "t3"]),
              _item("t4bad", kind="trace", verdict=FAILED, parent_id="t3", context_ids=["c4", "t3"])])


def test_provenance_credit_flows_back_along_a_three_deep_chain(memory_config):
    config = memory_config(provenance_credit=True, provenance_gamma_lambda=0.5, provenance_max_depth=3, alpha=0.2)
    bank = MemoryBank(config)
    _chain(bank)
    before = {item_id: bank.get(item_id) for item_id in bank.ids()}
    ack = bank.update(ValueUpdate(shown_ids=["c4", "t3"], attempt_id="t4", stage="refine", reward=0.5))
    assert ack.advantage == pytest.approx(0.5)  # first refine reward: raw (warm-up), baseline 0
    advantage = 0.5
    # depth 0: shown, full step and a visit; depth d: step alpha * 0.5^d, no visit; each item once
    depth = {"c4": 0, "t3": 0, "c3": 1, "t2": 1, "shared": 1, "c2": 2, "t1": 2, "c1": 3}
    assert ack.item_ids == ["c4", "t3"]
    assert ack.provenance_ids == ["c3", "t2", "shared", "c2", "t1", "c1"]
    for item_id, d in depth.items():
        q0 = before[item_id].q_refine
        item = bank.get(item_id)
        assert item.q_refine == pytest.approx(q0 + 0.2 * 0.5**d * (advantage - q0)), item_id
        assert item.visits_refine == (1 if d == 0 else 0), item_id
    assert bank.get("c1").q_refine == pytest.approx(0.2 * 0.125 * 0.5)  # 0.0125, by hand
    assert bank.get("t1").q_refine == pytest.approx(0.2 + 0.05 * (0.5 - 0.2))  # 0.215
    assert bank.get("t4").q_refine == before["t4"].q_refine  # the attempt itself is not in any context
    after = {item_id: bank.get(item_id).q_refine for item_id in bank.ids()}
    assert {item_id: MemoryBank(config).get(item_id).q_refine for item_id in bank.ids()} == after  # durable

    # a failed attempt passes nothing back; nor does a shallower depth limit reach c1
    ack = bank.update(ValueUpdate(shown_ids=["c4", "t3"], attempt_id="t4bad", stage="refine", reward=-1.0))
    assert ack.provenance_ids == []
    shallow = MemoryBank(config.model_copy(update={"provenance_max_depth": 2, "uri": config.uri + "-2"}))
    _chain(shallow)
    ack = shallow.update(ValueUpdate(shown_ids=["c4", "t3"], attempt_id="t4", stage="refine", reward=0.5))
    assert "c1" not in ack.provenance_ids and "t1" in ack.provenance_ids
    off = MemoryBank(config.model_copy(update={"provenance_credit": False, "uri": config.uri + "-3"}))
    _chain(off)
    assert off.update(ValueUpdate(shown_ids=["c4"], attempt_id="t4", stage="refine", reward=0.5)).provenance_ids == []


# -- an older bank opens with the new columns ------------------------------------------------------------

def test_a_bank_written_before_the_new_columns_opens_and_learns(memory_config):
    config = memory_config()
    db = lancedb.connect(config.uri)
    old_items = pa.schema([f for f in item_schema(MINILM_DIM) if f.name != "context_ids"])
    old_log = pa.schema([f for f in LOG_SCHEMA if f.name not in ("shown", "advantage", "base_count", "base_mean")])
    db.create_table("items", schema=old_items)
    db.create_table("log", schema=old_log)
    bank = MemoryBank(config)
    bank.add([_item("old", context_ids=["x"])])
    bank.update(ValueUpdate(shown_ids=["old"], stage="draft", reward=1.0))
    reopened = MemoryBank(config)
    assert reopened.get("old").context_ids == ["x"] and reopened.get("old").visits_draft == 1
    assert reopened.shaper.baselines["draft"].count == 1
