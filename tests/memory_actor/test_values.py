"""The value rule and the refine-reward normaliser, against hand-computed numbers."""

import numpy as np
import pytest

from memory_actor.bank import MemoryBank
from memory_actor.items import MemoryItem
from memory_actor.messages import RetrievalRequest, UnknownRetrieval, ValueUpdate
from memory_actor.values import RewardNormaliser, q_update

from .conftest import unit_vectors


def test_q_update_rule_by_hand():
    assert q_update(0.0, 1.0, 0.2) == pytest.approx(0.2)
    assert q_update(0.2, -1.0, 0.2) == pytest.approx(-0.04)  # 0.2 + 0.2 * (-1 - 0.2)
    assert q_update(-0.04, 1.0, 0.5) == pytest.approx(0.48)


def test_welford_matches_numpy():
    rewards = [0.3, -1.0, 0.7, 0.1, 0.9, -0.2]
    normaliser = RewardNormaliser()
    for reward in rewards:
        normaliser.observe(reward)
    assert normaliser.mean == pytest.approx(np.mean(rewards))
    assert normaliser.std == pytest.approx(np.std(rewards, ddof=1))


def _bank_with_items(memory_config, count=3, **config):
    """Lessons (prior 0) and no baseline, so the numbers below are the bare rule's."""
    bank = MemoryBank(memory_config(**{"baseline": False, **config}))
    items = [MemoryItem(kind="experience", backend="cpu", content=f"item {i}", embedding=v.tolist())
             for i, v in enumerate(unit_vectors(count))]
    return bank, bank.add(items)


def test_bank_updates_every_item_of_the_context_by_hand(memory_config):
    bank, ids = _bank_with_items(memory_config, alpha=0.2)
    vectors = unit_vectors(3)
    between = (vectors[0] + vectors[1]) / np.linalg.norm(vectors[0] + vectors[1])  # close to items 0 and 1
    retrieval = bank.retrieve(RetrievalRequest(query="", stage="draft", backend="cpu", n=2,
                                               query_embedding=between.tolist()))
    context = retrieval.item_ids
    assert sorted(context) == sorted(ids[:2])
    bank.update(ValueUpdate(retrieval_id=retrieval.retrieval_id, stage="draft", reward=1.0))
    bank.update(ValueUpdate(retrieval_id=retrieval.retrieval_id, item_ids=[ids[2]], stage="draft", reward=-1.0))
    for item_id in context:
        item = bank.get(item_id)
        assert item.q_draft == pytest.approx(-0.04) and item.visits_draft == 2
        assert item.q_refine == 0.0 and item.visits_refine == 0
    # the extra item (e.g. the start point) got only the second update
    assert bank.get(ids[2]).q_draft == pytest.approx(-0.2)
    assert bank.get(ids[2]).visits_draft == 1


def test_refine_rewards_are_normalised_by_running_statistics(memory_config):
    bank, ids = _bank_with_items(memory_config, alpha=0.5, normalise_warmup=2)
    first = bank.update(ValueUpdate(item_ids=[ids[0]], stage="refine", reward=0.8))
    assert first.reward_applied == pytest.approx(0.8)  # warm-up: raw reward
    second = bank.update(ValueUpdate(item_ids=[ids[1]], stage="refine", reward=0.2))
    # mean 0.5, sample std of (0.8, 0.2) = 0.4243: (0.2 - 0.5) / 0.4243 = -0.7071
    assert second.reward_applied == pytest.approx(-0.70710678)
    assert bank.get(ids[1]).q_refine == pytest.approx(0.5 * -0.70710678)
    draft = bank.update(ValueUpdate(item_ids=[ids[2]], stage="draft", reward=1.0))
    assert draft.reward_applied == 1.0  # draft rewards are not normalised
    reopened = MemoryBank(bank.config)
    assert reopened.normaliser.count == 2 and reopened.normaliser.mean == pytest.approx(0.5)


def test_unknown_context_is_refused(memory_config):
    bank, ids = _bank_with_items(memory_config)
    with pytest.raises(UnknownRetrieval):
        bank.update(ValueUpdate(retrieval_id="nope", stage="draft", reward=1.0))
    with pytest.raises(KeyError):
        bank.update(ValueUpdate(item_ids=["no-such-item"], stage="draft", reward=1.0))
    assert bank.get(ids[0]).visits_draft == 0


def test_a_retried_update_is_applied_once(memory_config):
    bank, ids = _bank_with_items(memory_config)
    update = ValueUpdate(item_ids=[ids[0]], stage="draft", reward=1.0)
    bank.update(update)
    again = bank.update(update)
    assert again.duplicate
    assert bank.get(ids[0]).visits_draft == 1
    assert MemoryBank(bank.config).stage_update(update).duplicate  # remembered across a restart
