"""The role table (launch/ray_campaign/roles.py): what docs/scale_out.md prints, and what it points at.

tests/launch/test_multinode.py checks a live two-node campaign's actors against the table.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import ray

from launch.ray_campaign.roles import ROLES, Role, RoleSpec, device_roles, markdown_table
from npu_pool.pools import Profiler, Verifier

DOCS = Path(__file__).resolve().parents[3] / "docs" / "scale_out.md"


def test_the_scale_out_guide_prints_the_role_table_as_the_code_has_it():
    assert markdown_table() in DOCS.read_text(), "docs/scale_out.md's role table differs from launch.ray_campaign.roles.ROLES"


@pytest.mark.parametrize("role", list(Role))
def test_every_role_names_a_class_or_function_that_exists(role):
    module, _, name = ROLES[role].qualified_name.rpartition(".")
    assert getattr(importlib.import_module(module), name) is not None


def test_the_device_pools_get_the_verifier_and_profiler_classes():
    assert device_roles() == {"verifier": Verifier, "profiler": Profiler}


def test_a_role_is_named_from_its_template_and_keeps_its_options():
    spec = RoleSpec(Verifier, "one", "none", "verifier/{device}", {"num_cpus": 0})
    options = spec.ray_options({"max_restarts": 2}, device="npu:3")
    assert options == {"name": "verifier/npu:3", "num_cpus": 0, "max_restarts": 2}
    with pytest.raises(KeyError):
        spec.ray_options()  # a template field left out is a mistake, not an empty name


def actor_classes_by_role(namespace: str) -> dict[str, set[str]]:
    """Which classes the live (or finished) actors of a namespace run, by the role their name says."""
    from ray.util.state import list_actors

    prefixes = {spec.name.split("/")[0]: role for role, spec in ROLES.items() if "/" in spec.name}
    found: dict[str, set[str]] = {}
    # This driver's own cluster: with no address, Ray looks for "the" local cluster and fails
    # when another one runs on the machine (two test runs side by side)
    address = ray.get_runtime_context().gcs_address
    for actor in list_actors(address=address, filters=[("ray_namespace", "=", namespace)], limit=1000):
        role = prefixes.get((actor.name or "").split("/")[0])
        if role is not None:
            found.setdefault(role.value, set()).add(actor.class_name)
    return found
