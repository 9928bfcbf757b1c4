"""Two-phase retrieval: Q ranking, similarity-only and none modes, filters, the recall pool,
seeded exploration, and API items by exact name."""

import numpy as np
import pytest

from memory_actor.bank import MemoryBank
from memory_actor.config import MemoryConfig
from memory_actor.items import ItemVerdict, MemoryItem
from memory_actor.messages import RetrievalRequest
from memory_actor.ranking import mixed_score, recall_pool_size
from memory_actor.seeding import bundle_items, seed_items

from .conftest import near, unit_vectors

QUERY = unit_vectors(1, seed=42)[0]
# Similarity to the query falls with the index; Q rises with it, so the two orders disagree.
SIMS = [0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6]
QS = [-0.5, -0.4, -0.3, -0.2, 0.1, 0.2, 0.3, 0.9]


def _graded_bank(memory_config, **config) -> tuple[MemoryBank, list[str]]:
    bank = MemoryBank(memory_config(**config))
    items = [MemoryItem(id=f"item{i}", kind="experience", backend="cpu", task_id=f"t{i % 2}", content=f"lesson {i}",
                        embedding=near(QUERY, sim, seed=i).tolist(), q_draft=q)
             for i, (sim, q) in enumerate(zip(SIMS, QS, strict=True))]
    return bank, bank.add(items)


def _request(**fields) -> RetrievalRequest:
    values = {"query": "", "stage": "draft", "backend": "cpu", "kinds": ["experience"], "n": 3,
              "query_embedding": QUERY.tolist(), "include_api": False}
    values.update(fields)
    return RetrievalRequest(**values)


def test_epsilon_zero_picks_the_highest_q_of_the_pool(memory_config):
    bank, ids = _graded_bank(memory_config, retrieval="value", ranker="q", recall_lambda=8 / 3, lambda_growth=0)
    retrieval = bank.retrieve(_request())
    assert retrieval.pool_size == 8
    assert retrieval.item_ids == ["item7", "item6", "item5"]
    assert retrieval.scores == pytest.approx([0.9, 0.3, 0.2])


def test_recall_pool_limits_what_value_ranking_sees(memory_config):
    bank, _ = _graded_bank(memory_config, retrieval="value", ranker="q", recall_lambda=2, lambda_growth=0)
    retrieval = bank.retrieve(_request())  # pool: the 6 most similar (K = 2 * 3)
    assert retrieval.pool_size == 6
    assert retrieval.item_ids == ["item5", "item4", "item3"]


def test_similarity_mode_ignores_q(memory_config):
    bank, _ = _graded_bank(memory_config, retrieval="similarity")
    retrieval = bank.retrieve(_request())
    assert retrieval.item_ids == ["item0", "item1", "item2"]
    assert retrieval.similarities == pytest.approx(SIMS[:3], abs=1e-5)


def test_none_mode_returns_nothing(memory_config):
    bank, _ = _graded_bank(memory_config, retrieval="none")
    retrieval = bank.retrieve(_request(include_api=True))
    assert retrieval.items == [] and retrieval.api_items == [] and retrieval.mode == "none"


def test_filters_backend_kind_and_excluded_task(memory_config):
    bank, _ = _graded_bank(memory_config, retrieval="similarity")
    bank.add([MemoryItem(id="gpu", kind="experience", backend="cuda", content="x", embedding=QUERY.tolist()),
              MemoryItem(id="trace", kind="trace", backend="cpu", content="y", embedding=QUERY.tolist(),
                         verdict=ItemVerdict(gate="ok"))])
    ids = bank.retrieve(_request(n=8, exclude_task_id="t0")).item_ids
    assert ids == ["item1", "item3", "item5", "item7"]
    assert bank.retrieve(_request(n=1, kinds=["trace"])).item_ids == ["trace"]
    assert bank.retrieve(_request(n=1, backend="cuda")).item_ids == ["gpu"]
    assert bank.retrieve(_request(backend="npu")).items == []


def test_mixed_ranker_trades_similarity_against_value(memory_config):
    bank, _ = _graded_bank(memory_config, retrieval="value", ranker="mixed", recall_lambda=8 / 3,
                           lambda_growth=0, w_sim=1.0, w_q=1.0)
    retrieval = bank.retrieve(_request(n=8))
    expected = mixed_score(np.array(SIMS), np.array(QS), 1.0, 1.0)
    assert retrieval.scores == pytest.approx(sorted(expected, reverse=True), abs=1e-4)
    assert retrieval.item_ids[0] == "item7"  # highest value wins with these weights


def test_mixed_score_of_an_empty_or_flat_pool_is_quiet_and_zero(recwarn):
    assert mixed_score(np.array([]), np.array([]), 1.0, 1.0).shape == (0,)
    assert mixed_score(np.array([0.5, 0.5]), np.array([0.1, 0.1]), 1.0, 1.0).tolist() == [0.0, 0.0]
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_exploration_is_reproducible_with_a_seed(memory_config):
    picks = []
    for attempt in range(2):
        bank, _ = _graded_bank(memory_config, uri=f"{memory_config().uri}-{attempt}", epsilon=0.5,
                               recall_lambda=8 / 3, lambda_growth=0, seed=7)
        picks.append([bank.retrieve(_request(seed=s)).item_ids for s in range(5)])
    assert picks[0] == picks[1]
    assert any(ids != ["item7", "item6", "item5"] for ids in picks[0])  # epsilon explored


def test_lambda_grows_with_the_bank():
    config = MemoryConfig(recall_lambda=3, lambda_growth=1, lambda_growth_start=1000, recall_lambda_max=10)
    assert recall_pool_size(5, 500, config) == 15
    assert recall_pool_size(5, 100_000, config) == 25  # lambda 3 + 1 * log10(100)
    assert recall_pool_size(5, 10**12, config) == 50  # capped at recall_lambda_max


def test_api_items_come_from_the_bundle_and_exact_names(memory_config, minilm):
    bank = MemoryBank(memory_config(retrieval="similarity"), embedder=minilm)
    bank.add(seed_items("cpu", set()))
    assert seed_items("cpu", set(bank.items)) == []  # seeding twice adds nothing
    code = "void kernel(...) { int t = omp_get_max_threads(); float y = expf(x); }"
    bank.add([MemoryItem(kind="trace", backend="cpu", content=code, summary="exp kernel", verdict=ItemVerdict(gate="ok"))])
    retrieval = bank.retrieve(RetrievalRequest(query="exp kernel", stage="draft", backend="cpu", kinds=["trace"], n=1))
    assert retrieval.items[0].content == code
    names = [item.name for item in retrieval.api_items]
    core = [item.name for item in bundle_items("cpu") if "core" in item.tags]
    assert names[: len(core)] == core
    assert "omp_get_max_threads" in names and "expf" in names
    assert bank.api_items("cpu", ["_mm256_fmadd_ps"], core=False)[0].name == "_mm256_fmadd_ps"


def test_real_embeddings_recall_the_related_practice(memory_config, minilm):
    bank = MemoryBank(memory_config(retrieval="similarity"), embedder=minilm)
    bank.add(seed_items("cpu", set()))
    retrieval = bank.retrieve(RetrievalRequest(query="numerically stable softmax over each row", stage="draft",
                                               backend="cpu", kinds=["practice"], n=1))
    assert "softmax" in retrieval.items[0].summary


def test_a_scoped_recall_shows_kernels_of_the_family_and_shape_and_lessons_that_teach(memory_config, tmp_path):
    """Issue 41: a request naming its family recalls traces of that family and signature shape,
    lessons of that family that teach at its stage, and unscoped practices; never another
    family's kernel, a failure record, or an untagged lesson (a bank from before the tags) - and
    the prefilter fills the pool from what is eligible, so nothing comes back short."""
    bank = MemoryBank(memory_config(retrieval="similarity"))

    def item(item_id: str, kind: str, sim: float, tags: list[str], stage: str = "draft") -> MemoryItem:
        return MemoryItem(id=item_id, kind=kind, backend="cpu", stage=stage, content=item_id, tags=tags,
                          verdict=ItemVerdict(gate="ok") if kind == "trace" else None,
                          embedding=near(QUERY, sim, seed=len(item_id) + int(sim * 100)).tolist())

    shape = "const float*,float*,int64_t"
    bank.add([item("relu", "trace", 0.80, ["family:elementwise", f"shape:{shape}"]),
              item("softmax", "trace", 0.99, ["family:softmax_norm", f"shape:{shape}"]),
              item("wide", "trace", 0.98, ["family:elementwise", f"shape:{shape},double"]),
              item("untagged", "trace", 0.97, []),
              item("fix", "experience", 0.70, ["lesson:fix", "family:elementwise"]),
              item("fix-other", "experience", 0.96, ["lesson:fix", "family:scan"]),
              item("failure", "experience", 0.95, ["lesson:failure", "family:elementwise"]),
              item("faster", "experience", 0.94, ["lesson:faster", "family:elementwise"], stage="refine"),
              item("old-lesson", "experience", 0.93, []),
              item("practice", "practice", 0.60, [])])
    scoped = _request(n=10, kinds=["experience", "trace", "practice"], family="elementwise", shape=shape)
    assert set(bank.retrieve(scoped).item_ids) == {"relu", "fix", "practice"}
    refine = scoped.model_copy(update={"stage": "refine"})
    assert set(bank.retrieve(refine).item_ids) == {"relu", "faster", "practice"}
    assert len(bank.retrieve(_request(n=10, kinds=["experience", "trace", "practice"])).item_ids) == 10  # unscoped
    bank.close()
