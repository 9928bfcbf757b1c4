"""A damaged bank is found and named, never read silently: truncated, garbled and single-byte
flipped files give one BankDamaged line naming the file and what to do, from the library, from
`evokernel memory stats` and from `evokernel run`."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from launch.cli import main
from memory_actor.bank import MemoryBank
from memory_actor.bank_checksums import MARKER, SUMS_FILE, bank_files
from memory_actor.bank_errors import BankDamaged
from memory_actor.items import MemoryItem
from memory_actor.messages import RetrievalRequest, ValueUpdate
from tests.memory_actor.conftest import unit_vectors

ADVICE = "restore it from a copy (its last good state), or move it aside and start afresh with another --memory"


@pytest.fixture
def bank(memory_config) -> Path:
    """A closed bank with items, a value update, and a fold (every table has data files)."""
    config = memory_config()
    bank = MemoryBank(config)
    ids = bank.add([MemoryItem(kind="experience", backend="cpu", content=f"lesson {i}", summary=f"lesson {i}",
                               embedding=v.tolist()) for i, v in enumerate(unit_vectors(12))])
    retrieval = bank.retrieve(RetrievalRequest(query="q", query_embedding=unit_vectors(1, 5)[0].tolist(),
                                               stage="draft", backend="cpu"))
    bank.update(ValueUpdate(update_id="u", retrieval_id=retrieval.retrieval_id, shown_ids=ids[:3], stage="draft",
                            reward=1.0))
    bank.close()
    return Path(config.uri)


def refusal(config) -> str:
    with pytest.raises(BankDamaged) as refused:
        MemoryBank(config, read_only=True)
    line = str(refused.value)
    assert "\n" not in line and line.startswith(f"the memory bank {config.uri} is damaged: ") and line.endswith(ADVICE)
    return line


def data_files(bank: Path) -> list[str]:
    return sorted(name for name in bank_files(bank) if "/data/" in name)


def test_every_file_is_recorded_and_an_intact_bank_opens(bank, memory_config):
    recorded = json.loads((bank / SUMS_FILE).read_text())["files"]
    assert set(recorded) == set(bank_files(bank)) and data_files(bank)
    assert MemoryBank(memory_config(), read_only=True).stats().updates == 1


def test_single_byte_flips_are_all_found(bank, memory_config):
    rng = random.Random(45)
    files = data_files(bank)
    for _ in range(30):
        name = rng.choice(files)
        path = bank / name
        data = bytearray(path.read_bytes())
        at = rng.randrange(len(data))
        original = data[at]
        data[at] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))
        try:
            assert f"{name} does not match its checksum" in refusal(memory_config())
        finally:
            data[at] = original
            path.write_bytes(bytes(data))
    MemoryBank(memory_config(), read_only=True)  # restored: it opens again


def test_truncated_and_garbled_files_are_named(bank, memory_config):
    name = data_files(bank)[0]
    size = (bank / name).stat().st_size
    original = (bank / name).read_bytes()
    (bank / name).write_bytes(original[: size // 2])
    assert f"{name} has {size // 2} bytes, {size} were written (truncated or overwritten)" in refusal(memory_config())
    (bank / name).write_bytes(bytes(random.Random(1).randrange(256) for _ in range(size)))
    assert f"{name} does not match its checksum" in refusal(memory_config())


def test_a_file_the_record_does_not_cover_is_still_one_line(bank, memory_config):
    # A bank written before checksums (no record, no markers): LanceDB's own complaint, in one line.
    (bank / SUMS_FILE).unlink()
    for marker in bank.glob(f"*.lance/{MARKER}"):
        marker.unlink()
    manifests = sorted(name for name in bank_files(bank) if name.startswith("meta.lance/_versions/"))
    for name in manifests:
        (bank / name).write_bytes(b"\0" * 10)
    assert "its storage cannot read it (" in refusal(memory_config())


def test_memory_stats_and_run_say_it_in_one_line(bank, memory_config, tmp_path, capsys):
    name = data_files(bank)[0]
    with (bank / name).open("r+b") as stream:
        stream.seek(100)
        byte = stream.read(1)
        stream.seek(100)
        stream.write(bytes([byte[0] ^ 0xFF]))
    assert main(["memory", "stats", "--memory", str(bank)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line == f"evokernel memory: the memory bank {bank} is damaged: {name} does not match its checksum " \
                   f"(changed after it was written); {ADVICE}"
    code = main(["run", "--no-ray", "--tasks", "4_ReLU*", "--llm-base-url", "http://127.0.0.1:9/v1", "--memory",
                 str(bank), "--out", str(tmp_path / "run"), "--backend", "cpu"])
    [line] = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and line.startswith(f"evokernel run: the memory bank {bank} is damaged: {name}")


def test_a_deleted_checksum_record_is_refused_not_read_silently(bank, memory_config):
    """Issue 55: with checksums.json deleted, flipped bytes were read silently again."""
    (bank / SUMS_FILE).unlink()
    [first, *_] = data_files(bank)
    raw = bytearray((bank / first).read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (bank / first).write_bytes(bytes(raw))
    for read_only in (True, False):
        with pytest.raises(BankDamaged) as refused:
            MemoryBank(memory_config(), read_only=read_only)
        line = str(refused.value)
        assert "\n" not in line and line.startswith(f"the memory bank {bank} is damaged: it had checksums and its checksums.json is gone"), line
        assert "restore checksums.json from a copy" in line and MARKER in line
    assert not (bank / SUMS_FILE).exists()  # refusing wrote no new record over the loss


def test_a_garbled_checksum_record_is_refused_too(bank, memory_config):
    (bank / SUMS_FILE).write_text("{not json")
    with pytest.raises(BankDamaged, match="its checksums.json cannot be read"):
        MemoryBank(memory_config(), read_only=True)


def test_deleting_the_markers_too_accepts_the_files_as_they_are(bank, memory_config):
    (bank / SUMS_FILE).unlink()
    for marker in bank.glob(f"*.lance/{MARKER}"):
        marker.unlink()
    assert MemoryBank(memory_config(), read_only=True).stats().updates == 1
    MemoryBank(memory_config()).close()  # the writer records the files afresh, and marks them
    assert (bank / SUMS_FILE).exists() and list(bank.glob(f"*.lance/{MARKER}"))
