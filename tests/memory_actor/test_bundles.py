"""The backend bundles load with distinct, stable ids, and hold a verified worked example per
operator family in place of the fragment templates they had (the examples themselves, and
their gates, are tests/memory_actor/test_family_examples.py's)."""

from __future__ import annotations

import pytest

from actors.families import FAMILIES
from memory_actor.seeding import BUNDLE_BACKENDS, bundle_items, example_items


@pytest.mark.parametrize("backend", BUNDLE_BACKENDS)
def test_bundle_loads_with_distinct_ids_and_an_example_per_family(backend):
    items = bundle_items(backend)
    assert len({item.id for item in items}) == len(items)
    assert [item.id for item in items] == [item.id for item in bundle_items(backend)]  # stable: seeding keeps values
    assert all(item.summary and item.content for item in items)
    assert not any((item.name or "").startswith("template_") for item in items)
    examples = example_items(backend)
    assert sorted(examples) == sorted(FAMILIES)
    for item in examples.values():
        # looked up by name for the draft's decision, never pushed into every prompt
        assert "core" not in item.tags and item.task_id and item.task_signature
        assert 'extern "C"' in item.content and "kernel(" in item.content
