"""Phase-1 recall of a large bank through LanceDB's vector index (issue 68; docs/memory.md, "A
bank of a million items").

- `table`: the bank's `recall` table (ids, the prefilter's columns, embeddings) and its IVF_SQ
  index; the filter as LanceDB SQL.
- `indexed`: `IndexedRecall`: a recall from the index merged with an exact search of the items
  added since its last refresh; the refresh.
- `columns`: the items table read column by column into the index's codes and values.
- `items`: `LazyItems`, the bank's items read from disk by id, cached.

Used by `memory_actor.bank` when a bank opens with at least `memory.recall_index_min_items`
items. May import: `memory_actor.config`, `index`, `items`, `scope`, `values`.
"""
