"""One memory actor per bank on a real local Ray cluster: campaigns on different banks share a
cluster, a second campaign on a bank someone else writes is refused in one line naming the
holder (also when its actor loses the race for the lease, with no traceback on the terminal)."""

from __future__ import annotations

import os
import time

import pytest
import ray

from memory_actor.actor_handle import open_memory_actor
from memory_actor.config import cluster_config, memory_actor_name
from memory_actor.disk.lease import BankInUse, BankUnusable
from memory_actor.items import MemoryItem
from memory_actor.messages import ValueUpdate
from tests.memory_actor.conftest import unit_vectors
from tests.memory_actor.test_lease import holder


def _item(i: int) -> MemoryItem:
    return MemoryItem(id=f"item-{i}", kind="practice", backend="cpu", summary=f"practice {i}", content=f"practice {i}",
                      embedding=unit_vectors(2)[i].tolist())


def _ended(name: str, timeout_s: float = 30) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get_actor(name)
        except ValueError:
            return True
        time.sleep(0.2)
    return False


def test_the_actor_is_named_after_its_bank(memory_config, tmp_path, monkeypatch):
    one, other = memory_config(actor_name=None), memory_config(actor_name=None, uri=str(tmp_path / "other"))
    assert memory_actor_name(one) != memory_actor_name(other)
    assert memory_actor_name(one).startswith("evokernel-memory-")
    monkeypatch.chdir(tmp_path)
    relative = memory_config(actor_name=None, uri="bank")
    assert memory_actor_name(relative) == memory_actor_name(one)  # the same folder, however it is written
    assert cluster_config(relative).actor_name == memory_actor_name(one)  # fixed for episodes elsewhere
    assert memory_actor_name(memory_config(actor_name="mine")) == "mine"
    assert memory_actor_name(memory_config(actor_name=None, uri="s3://team/bank/")) != memory_actor_name(
        memory_config(actor_name=None, uri="s3://team/other"))


def test_two_banks_on_one_cluster_each_get_their_actor(ray_cluster, memory_config, tmp_path):
    first = memory_config(actor_name=None)
    second = memory_config(actor_name=None, uri=str(tmp_path / "second"))
    a = open_memory_actor(first, owner="evokernel run a")
    b = open_memory_actor(second, owner="evokernel run b")
    try:
        assert ray.get(a.pid.remote()) != ray.get(b.pid.remote())
        for actor, rewards in ((a, [1.0, 1.0]), (b, [-1.0])):
            ray.get(actor.add.remote([_item(0), _item(1)]))
            for n, reward in enumerate(rewards):
                ray.get(actor.update.remote(ValueUpdate(update_id=f"u{n}", shown_ids=["item-0"], stage="draft",
                                                        reward=reward)))
        stats = [ray.get(actor.stats.remote(False)) for actor in (a, b)]
        assert [s.uri for s in stats] == [first.uri, second.uri]
        assert [s.updates for s in stats] == [2, 1]  # each bank got its own campaign's updates
        assert ray.get(a.get.remote("item-0")).visits_draft == 2 and ray.get(b.get.remote("item-0")).visits_draft == 1
    finally:
        ray.kill(a)
        ray.kill(b)


def test_a_second_campaign_on_the_cluster_is_refused_naming_the_first(ray_cluster, memory_config):
    config = memory_config(actor_name=None)
    first = open_memory_actor(config, owner="evokernel run first-run")
    try:
        with pytest.raises(BankInUse) as refused:
            open_memory_actor(config, owner="evokernel run second-run")
        message = str(refused.value)
        assert "is in use by evokernel run first-run" in message and "\n" not in message
        assert f"pid {ray.get(first.pid.remote())}" in message
        assert open_memory_actor(config, owner="evokernel run first-run") is not None  # its own campaign: welcome
        assert ray.get(first.stats.remote(False)).uri == config.uri  # the first still serves
    finally:
        ray.kill(first)


def test_an_actor_of_that_name_serving_another_bank_is_refused(ray_cluster, memory_config, tmp_path):
    config = memory_config()  # a name set by hand
    first = open_memory_actor(config, owner="evokernel run a")
    try:
        with pytest.raises(BankUnusable, match="serves the bank") as refused:
            open_memory_actor(config.model_copy(update={"uri": str(tmp_path / "elsewhere")}), owner="evokernel run b")
        assert "\n" not in str(refused.value)
    finally:
        ray.kill(first)


def test_an_actor_that_loses_the_lease_race_says_so_in_one_line(ray_cluster, memory_config, capfd):
    config = memory_config(actor_name=None)
    os.makedirs(config.uri, exist_ok=True)
    with holder(config.uri) as process:
        capfd.readouterr()
        with pytest.raises(BankInUse) as refused:
            open_memory_actor(config, owner="evokernel run late-run")
        message = str(refused.value)
        assert "is in use by evokernel run holder-run" in message and f"pid {process.pid}" in message
        assert "\n" not in message
        assert _ended(memory_actor_name(config))  # the refused actor was ended
        time.sleep(2)  # Ray's error listener prints from a thread of its own: give it time
        out, err = capfd.readouterr()
        assert "Traceback" not in out + err and "BankInUse" not in out + err, out + err
    actor = open_memory_actor(config, owner="evokernel run late-run")  # the holder is gone: it starts
    try:
        assert ray.get(actor.stats.remote(False)).uri == config.uri
    finally:
        ray.kill(actor)


def test_close_gives_the_lease_back_while_the_actor_lives(ray_cluster, memory_config):
    """A campaign's end closes its memory actor before killing it: a `--resume` started at once
    must find the bank free, not held until Ray gets round to ending the actor's process."""
    from memory_actor.bank import MemoryBank

    config = memory_config(actor_name=None)
    actor = open_memory_actor(config, owner="evokernel run closing")
    try:
        ray.get(actor.add.remote([_item(0), _item(1)]))
        ray.get(actor.update.remote(ValueUpdate(update_id="u0", shown_ids=["item-0"], stage="draft", reward=1.0)))
        with pytest.raises(BankInUse):
            MemoryBank(config, owner="evokernel run too early")
        durable = ray.get(actor.close.remote())
        assert durable >= 1 and ray.get(actor.pid.remote())  # the actor is still there
        reopened = MemoryBank(config, owner="evokernel run --resume")  # the lease is free
        try:
            assert reopened.log_rows == 0  # closing folded the log
            assert reopened.get("item-0").visits_draft == 1
        finally:
            reopened.close()
    finally:
        ray.kill(actor, no_restart=True)
