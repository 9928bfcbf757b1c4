"""Phase-1 recall of a large bank through LanceDB's vector index (issue 68; docs/memory.md, "A
bank of a million items").

- `table`: the bank's `recall` table (ids, the prefilter's columns, embeddings) and its IVF_SQ
  index; the filter as LanceDB SQL.
- `indexed`: `IndexedRecall`: a recall from the index merged with an exact search of the items
  added since its last refresh; the refresh.
- `columns`: the items table read column by column into the index's codes and values.
- `items`: `LazyItems`, the bank's items read from disk by id, cached.
- `opening`: a large bank opened: its columns, its api items, the recall table built or caught up.
- `bank_mixin`: what `MemoryBank` does differently on the index (a mixin, like `BankJournal`).

Used by `memory_actor.bank` when a bank opens with at least `memory.recall_index_min_items`
items. May import: `memory_actor.config`, `index`, `items`, `scope`, `values`,
`disk.bank_errors`; never `bank`, `bank_retrieval` or `actor`.
"""
