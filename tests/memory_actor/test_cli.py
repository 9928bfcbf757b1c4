"""`evokernel memory ...` on real banks in tmp_path."""

import json

from launch.cli import main
from memory_actor.seeding import bundle_items


def _json_out(capsys):
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_memory_commands_on_a_real_bank(tmp_path, capsys, minilm):
    bank = str(tmp_path / "bank")
    assert main(["memory", "--memory", bank, "seed", "cpu"]) == 0
    assert f"seeded {len(bundle_items('cpu'))} cpu" in capsys.readouterr().out
    assert main(["memory", "--memory", bank, "seed", "cpu"]) == 0
    assert "seeded 0 cpu" in capsys.readouterr().out

    assert main(["memory", "stats", "--json", "--memory", bank]) == 0
    stats = _json_out(capsys)
    assert stats["items"] == len(bundle_items("cpu"))
    assert stats["items_by_kind"]["practice"] > 0 and stats["bank_bytes"] > 0

    assert main(["memory", "--memory", bank, "search", "stable softmax per row", "--kinds", "practice",
                 "-n", "2", "--json"]) == 0
    found = _json_out(capsys)
    assert len(found["items"]) == 2 and "softmax" in found["items"][0]["summary"]
    item_id = found["items"][0]["id"]

    assert main(["memory", "--memory", bank, "show", item_id]) == 0
    shown = capsys.readouterr().out
    assert item_id in shown and "running max" in shown

    export = tmp_path / "bank.jsonl"
    assert main(["memory", "--memory", bank, "export", str(export)]) == 0
    assert len(export.read_text().splitlines()) == 1 + stats["items"]
    other = str(tmp_path / "other")
    assert main(["memory", "--memory", other, "import", str(export)]) == 0
    capsys.readouterr()
    assert main(["memory", "--memory", other, "show", item_id, "--json"]) == 0
    assert _json_out(capsys)["item"]["content"] == found["items"][0]["content"]
    assert main(["memory", "--memory", other, "stats"]) == 0
    assert f"items      {stats['items']}" in capsys.readouterr().out


def test_memory_command_errors_are_clear(tmp_path, capsys):
    bank = str(tmp_path / "bank")
    assert main(["memory", "--memory", bank, "stats"]) == 2
    assert "no memory bank at" in capsys.readouterr().err
    assert not (tmp_path / "bank" / "meta.lance").exists()  # looking does not create a bank
    (tmp_path / "empty.jsonl").write_text('{"format": "evokernel-memory-export", "version": 1}\n')
    assert main(["memory", "--memory", bank, "import", str(tmp_path / "empty.jsonl")]) == 0
    assert main(["memory", "--memory", bank, "show", "nope"]) == 2
    assert "no item 'nope'" in capsys.readouterr().err
    assert main(["memory", "--memory", bank, "search", "x", "--kinds", "recipes"]) == 2
    assert "unknown item kinds" in capsys.readouterr().err
    (tmp_path / "junk.jsonl").write_text("{}\n")
    assert main(["memory", "--memory", bank, "import", str(tmp_path / "junk.jsonl")]) == 2
    assert "not an EvoKernel memory export" in capsys.readouterr().err


def test_search_shows_failed_traces_only_when_asked(tmp_path, capsys, minilm):
    from memory_actor.bank import MemoryBank
    from memory_actor.config import MemoryConfig
    from memory_actor.items import ItemVerdict, MemoryItem

    uri = str(tmp_path / "bank")
    bank = MemoryBank(MemoryConfig(uri=uri, preload_embedder=False))
    bank.add([MemoryItem(id=f"trace-{gate}", kind="trace", backend="cpu", task_id="4_ReLU", summary=f"relu {gate}",
                         content=f"// relu kernel, {gate}", verdict=ItemVerdict(gate=gate)) for gate in ("ok", "compile")])
    bank.close()
    assert main(["memory", "--memory", uri, "search", "relu kernel", "--kinds", "trace", "--json"]) == 0
    assert [item["id"] for item in _json_out(capsys)["items"]] == ["trace-ok"]
    assert main(["memory", "--memory", uri, "search", "relu kernel", "--kinds", "trace", "--failed-traces"]) == 0
    out = capsys.readouterr().out
    assert "trace [ok]" in out and "trace [compile]" in out
