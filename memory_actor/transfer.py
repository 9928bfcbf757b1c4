"""Export a bank to a JSON-lines file and import one: a header line, then one item per line
with its values and embedding (dropped on import when the embedders differ)."""

from __future__ import annotations

import json
from pathlib import Path

from memory_actor.bank import MemoryBank
from memory_actor.items import MemoryItem

FORMAT = "evokernel-memory-export"
IMPORT_BATCH = 1000


def export_bank(bank: MemoryBank, path: str | Path) -> int:
    """Write every item of `bank` to `path`; returns the number written."""
    rows = bank.export_rows()
    with Path(path).open("w") as out:
        out.write(json.dumps({"format": FORMAT, "version": 1, "embedder": bank.identity, "dim": bank.dim,
                              "items": len(rows)}) + "\n")
        for row in rows:
            out.write(json.dumps(row) + "\n")
    return len(rows)


def import_bank(bank: MemoryBank, path: str | Path) -> int:
    """Add (or overwrite, by id) every item in an export file; returns the number imported."""
    with Path(path).open() as source:
        header = json.loads(source.readline() or "{}")
        if header.get("format") != FORMAT:
            raise ValueError(f"{path} is not an EvoKernel memory export (no {FORMAT} header)")
        keep_vectors = header.get("embedder") == bank.identity and header.get("dim") == bank.dim
        batch: list[MemoryItem] = []
        count = 0
        for line in source:
            if not line.strip():
                continue
            item = MemoryItem.model_validate_json(line)
            if not keep_vectors:
                item.embedding = None  # re-embedded with this bank's model
            batch.append(item)
            if len(batch) >= IMPORT_BATCH:
                count += len(bank.add(batch))
                batch = []
        count += len(bank.add(batch))
    return count
