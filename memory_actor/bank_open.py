"""Opening a bank: its store, as the bank's one writer (the lease: memory_actor.disk.lease) or
read-only (no lease, nothing written), the embedding dimension it was built with, and the check
that this config embeds the way the bank was built; then its items as MemoryBank indexes them.

A new bank records its embedder in meta when a writer opens it; a bank written with another
embedder is refused, since its vectors and this config's queries would not be comparable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from memory_actor.config import MemoryConfig
from memory_actor.disk.bank_errors import open_failure
from memory_actor.disk.store import BankStore
from memory_actor.embeddings import MINILM_DIM, embedder_identity
from memory_actor.items import MemoryItem, items_from_arrow, utc_now


def open_store(config: MemoryConfig, embedder_dim: Callable[[], int], *, read_only: bool = False,
               owner: str | None = None) -> tuple[BankStore, int, dict[str, Any]]:
    """The bank's store opened, its embedding dimension and its meta. A writer takes the lease
    first (BankInUse names the holder); `embedder_dim` is asked only for a new bank whose
    embedder is not the packaged MiniLM. A refused bank gives the lease back."""
    identity = embedder_identity(config)
    store = BankStore(config.uri, config.storage_options, read_only=read_only, owner=owner)
    dim = store.stored_dim() or (embedder_dim() if config.embedder != "minilm" else MINILM_DIM)
    store.open(dim)
    try:
        try:
            meta = store.read_meta()
        except Exception as exc:  # the storage cannot read it: one line, not its traceback
            raise open_failure(exc, config.uri) from exc
        bank = meta.get("bank")
        if bank is None and not read_only:
            store.write_meta({"bank": {"dim": dim, "embedder": identity, "created_at": utc_now().isoformat()}})
        elif bank is not None and bank["embedder"] != identity:
            raise ValueError(
                f"the bank at {config.uri} holds {bank['embedder']} embeddings; this config embeds with "
                f"{identity}: use another --memory URI or the matching embedder"
            )
    except BaseException:
        store.close()
        raise
    return store, dim, meta


def stored_items(store: BankStore, dim: int) -> tuple[list[MemoryItem], np.ndarray]:
    """The items table's items (without embeddings) and their vectors, one row each."""
    table = store.read_items()
    if not table.num_rows:
        return [], np.zeros((0, dim), dtype=np.float32)
    vectors = table.column("embedding").combine_chunks().values.to_numpy(zero_copy_only=False)
    return items_from_arrow(table, with_embedding=False, trusted=True), vectors.reshape(-1, dim)
