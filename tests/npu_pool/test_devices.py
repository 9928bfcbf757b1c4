"""Device discovery and slot planning (no Ray needed: nodes are described as Ray reports them)."""

from __future__ import annotations

import os

import pytest

from npu_pool.devices import FakeDevices, NodeDevices, device_kind, local_devices, plan_slots


def test_fake_device_specs():
    assert FakeDevices.parse("npu:4") == FakeDevices(kind="npu", count=4)
    assert FakeDevices.parse(" GPU : 2 ").kind == "cuda"
    assert FakeDevices.parse("npu:4").ray_init_kwargs() == {"resources": {"NPU": 4}}
    assert FakeDevices.parse("cuda:2").ray_init_kwargs() == {"num_gpus": 2}
    for bad in ("npu", "npu:0", "tpu:2", "npu:-1", ""):
        with pytest.raises(ValueError, match="KIND:COUNT"):
            FakeDevices.parse(bad)


def test_local_devices_on_this_machine():
    found = local_devices()
    assert found.cpu == os.cpu_count()
    # No NPU toolkit here: the npu backend says why, and torch_npu is never imported.
    if found.npu == 0:
        assert any(note.startswith("npu:") for note in found.notes)


def _nodes() -> list[NodeDevices]:
    return [NodeDevices(node_id="b" * 8, node_ip="10.0.0.2", npu=2, cpu=8),
            NodeDevices(node_id="a" * 8, node_ip="10.0.0.1", is_head=True, npu=3, gpu=1, cpu=3)]


def test_one_slot_per_accelerator_spread_across_nodes():
    slots = plan_slots(_nodes(), "npu")
    assert len(slots) == 5 and all(s.bundle == {"NPU": 1.0} for s in slots)
    # round-robin over nodes, so a cap still uses every node
    assert [s.node_ip for s in slots[:4]] == ["10.0.0.2", "10.0.0.1", "10.0.0.2", "10.0.0.1"]
    capped = plan_slots(_nodes(), "npu", max_devices=2)
    assert {s.node_ip for s in capped} == {"10.0.0.1", "10.0.0.2"}
    assert [s.bundle for s in plan_slots(_nodes(), "cuda")] == [{"GPU": 1.0}]


def test_cpu_slots_group_cores_and_never_ask_more_than_a_node_has():
    slots = plan_slots(_nodes(), "cpu", cpus_per_slot=4)
    per_node = {ip: [s for s in slots if s.node_ip == ip] for ip in ("10.0.0.1", "10.0.0.2")}
    assert len(per_node["10.0.0.2"]) == 2 and per_node["10.0.0.2"][0].bundle == {"CPU": 4.0}
    assert len(per_node["10.0.0.1"]) == 1 and per_node["10.0.0.1"][0].bundle == {"CPU": 3.0}


def test_device_kind_follows_the_backend_or_the_cluster():
    nodes = _nodes()
    assert device_kind("cpu", nodes) == "cpu"
    assert device_kind("auto", nodes) == "npu"
    assert device_kind("auto", [NodeDevices(node_id="c", node_ip="x", gpu=2, cpu=4)]) == "cuda"
    assert device_kind("auto", [NodeDevices(node_id="c", node_ip="x", cpu=4)]) == "cpu"
