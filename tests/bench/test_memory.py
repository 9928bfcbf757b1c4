"""bench/memory.py at a small size on a real local Ray cluster, and its MemoryClient, the one
caller of MemoryActor.update_batch."""

import json
import threading

import pytest
import ray
import structlog

from bench import memory, memory_bank_build, memory_writers
from bench.memory_client import MemoryClient
from memory_actor.actor_handle import get_or_create_memory_actor
from memory_actor.messages import ValueUpdate


@pytest.fixture(autouse=True)
def _fresh_structlog():
    """bench.memory binds structlog to the sys.stderr of the moment (pytest's capture, closed after
    the test); reset it so later log lines do not write to a closed file."""
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


def _json_line(capsys) -> dict:
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1, out  # stdout is the JSON line alone; progress and summary go to stderr
    return json.loads(out[0])


def test_bench_memory_small(ray_cluster, capsys):
    assert memory.main(["--items", "2000", "--updates", "1500", "--unbatched-updates", "300",
                        "--retrievals", "200", "--callers", "4", "--writers", "8"]) == 0
    result = _json_line(capsys)
    assert result["bench"] == "memory"
    for key in ("items", "retrieve_p50_ms", "retrieve_p99_ms", "updates_per_s", "lost_updates", "bank_bytes",
                "versions"):
        assert key in result
    assert result["items"] == 2000 and result["lost_updates"] == 0 and result["value_mismatches"] == 0
    assert result["retrieve_p99_ms"] >= result["retrieve_p50_ms"] > 0
    # below recall_index_min_items: the exact recall, whose pool is exact search's own
    assert not result["indexed"] and result["recall_at_k"] == 1.0 and result["recall_k"] == 17
    assert result["recall_at_k_unseen"] == 1.0
    assert result["actor_rss_mb"] > 0 and result["actor_peak_rss_mb"] >= result["actor_rss_mb"]
    two = result["two_writers"]  # the second campaign on the bank is refused, naming the first; nothing is lost
    assert two["second_writer_refused"] and "is in use by campaign-a" in two["refusal"]
    assert two["lost_updates"] == 0 and two["value_mismatches"] == 0 and two["duplicate_items"] == 0 and two["seq_unique"]


def test_bench_memory_small_on_the_index(ray_cluster, capsys):
    """Above recall_index_min_items (here 2,000): the bank is indexed first (index_build_s), the
    actor recalls through LanceDB, and its pool is measured against exact search."""
    assert memory.main(["--items", "3000", "--updates", "1000", "--unbatched-updates", "200", "--retrievals", "200",
                        "--callers", "4", "--writers", "8", "--index-min-items", "2000", "--recall-queries", "60",
                        "--set", "recall_index_batch=2"]) == 0
    result = _json_line(capsys)
    assert result["indexed"] and result["index_build_s"] > 0 and result["embeddings"] == "clustered"
    assert result["recall_k"] == 18 and result["recall_queries"] == 60 and 0.8 <= result["recall_at_k"] <= 1.0
    assert 0.0 <= result["recall_at_k_unseen_min"] <= result["recall_at_k_unseen"] <= 1.0
    assert result["lost_updates"] == 0 and result["value_mismatches"] == 0 and result["first_retrieve_ms"] > 0
    assert len(result["load_average"]) == 2
    assert result["settings"] == {"recall_index_batch": "2", "recall_index_min_items": 2000}


def test_bench_memory_refuses_empty_sizes(capsys):
    with pytest.raises(SystemExit) as exit_info:
        memory.main(["--items", "0"])
    assert exit_info.value.code == 2 and "--items must be at least 1" in capsys.readouterr().err


@pytest.mark.slow
def test_bench_memory_at_100k_items(ray_cluster, capsys):
    assert memory.main(["--items", "100000"]) == 0
    result = _json_line(capsys)
    assert result["lost_updates"] == 0 and result["value_mismatches"] == 0


def test_client_batches_updates_in_order(ray_cluster, memory_config):
    """Concurrent writers through one client: every update acknowledged once, the bank's values
    equal a serial replay in acknowledged order, and a refused update fails only its own future."""
    config = memory_config()
    ids = memory_bank_build.build_synthetic_bank(config.uri, 6)
    actor = get_or_create_memory_actor(config)
    client = MemoryClient(actor, max_batch=16)
    updates = [ValueUpdate(shown_ids=[ids[k % 6]], stage="draft" if k % 4 else "refine", reward=(k % 3) - 1.0)
               for k in range(300)]
    futures = [None] * len(updates)

    def writer(w):
        for k in range(w, len(updates), 10):
            futures[k] = client.update(updates[k])

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    refused = client.update(ValueUpdate(item_ids=["missing"], stage="draft", reward=1.0))
    acks = [future.result(timeout=60) for future in futures]
    with pytest.raises(KeyError, match="missing"):
        refused.result(timeout=60)
    client.close()
    assert len({ack.seq for ack in acks}) == len(updates) and all(ack.durable for ack in acks)
    ray.get(actor.flush.remote())
    ray.kill(actor)
    assert memory_writers.compare_with_serial_replay(memory_writers.reopen(config), updates, acks, config) == (0, 0)
