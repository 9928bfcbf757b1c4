"""The bank's files: the LanceDB store and what keeps it whole across writers and damage.

- `store`: the LanceDB tables (items, the update log), their reads and writes.
- `lease`: one writer per bank (a lease record beside the tables).
- `bank_checksums`: the tables' checksums and the markers that say a folder had them.
- `bank_errors`: a bank that cannot be opened or written, in one line naming what to do.

Opening a bank (`memory_actor.bank_open`) and its write-ahead journal (`memory_actor.journal`)
sit above, with the messages and settings they need.

May import: `memory_actor.items` only. Never imports anything else of memory_actor.
"""
