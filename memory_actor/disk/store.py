"""The bank on LanceDB: an items table, an append-only log of value updates and retrieval
contexts, a small meta table, and the history of folded update rows. Every path goes through
lancedb.connect(uri), so a local directory and an object store (s3://, gs://, az://) behave
the same."""

from __future__ import annotations

import functools
import json
import os
import warnings
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

import lancedb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from memory_actor.disk.bank_checksums import BankChecksums
from memory_actor.disk.bank_errors import open_failure, write_failure
from memory_actor.disk.lease import BankLease, check_writable, is_local, local_path
from memory_actor.items import item_schema

ITEMS, LOG, META, HISTORY = "items", "log", "meta", "history"
HISTORY_TYPES = ("update", "slot", "retract")  # the rows a resume may still need (retraction.py)

LOG_SCHEMA = pa.schema(
    [
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("type", pa.string(), nullable=False),  # "update" or "retrieval"
        pa.field("ref_id", pa.string(), nullable=False),  # update_id or retrieval_id
        pa.field("retrieval_id", pa.string()),
        pa.field("stage", pa.string()),
        pa.field("reward", pa.float64()),
        pa.field("applied", pa.float64()),
        pa.field("item_ids", pa.list_(pa.string())),
        pa.field("q", pa.list_(pa.float64())),  # absolute values after the update: replay is idempotent
        pa.field("visits", pa.list_(pa.int64())),
        pa.field("norm_count", pa.int64()),
        pa.field("norm_mean", pa.float64()),
        pa.field("norm_m2", pa.float64()),
        pa.field("at", pa.timestamp("us", tz="UTC")),
        # Added for issue 13 (older logs get them as null columns on open):
        pa.field("shown", pa.int64()),  # the first `shown` item_ids were shown; the rest got provenance credit
        pa.field("advantage", pa.float64()),  # what Q moved towards: applied minus the stage's baseline
        pa.field("base_count", pa.int64()),  # the stage's baseline after the update (absolute, like q)
        pa.field("base_mean", pa.float64()),
        # Added for issue 26.6: Q before the update, per item (a take-back's start after a fold).
        pa.field("before", pa.list_(pa.float64())),
    ]
)
META_SCHEMA = pa.schema([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string())])


class BankReadOnly(Exception):
    """A write to a bank opened read-only (inspection commands never write, not even on close)."""


Write = TypeVar("Write", bound=Callable[..., Any])


def _writes(method: Write) -> Write:
    """A write to the tables: what the storage raises becomes BankWriteFailed, one line naming
    the cause (a full disk) and the bank, not the library's text."""
    @functools.wraps(method)
    def write(self: BankStore, *args: Any, **kwargs: Any) -> Any:
        self._writable()
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            raise write_failure(exc, self.uri) from exc
    return write  # type: ignore[return-value]


class BankStore:
    """Thin, synchronous access to the tables: items, log, meta, and history (the update rows a
    fold took out of the log, kept so that a resume can still take them back: retraction.py).
    Not thread-safe: callers serialise writes.

    A writer holds the bank's lease (memory_actor.disk.lease: one writer per bank, across processes
    and machines) from `open` to `close`; a read-only store takes no lease and refuses writes."""

    def __init__(self, uri: str, storage_options: dict[str, str] | None = None, *, read_only: bool = False,
                 owner: str | None = None):
        self.uri = uri
        self.storage_options = dict(storage_options or {})
        self.read_only = read_only
        self.lease = BankLease(uri, owner) if is_local(uri) and not read_only else None
        if self.lease is not None:
            check_writable(uri)  # one clear line, before lancedb creates folders (a traceback there)
        self.checksums = BankChecksums(local_path(uri), uri) if is_local(uri) else None
        self.db = lancedb.connect(uri, storage_options=self.storage_options or None)
        self.items: Any = None
        self.log: Any = None
        self.meta: Any = None
        self.history: Any = None

    def open(self, dim: int) -> None:
        """Open (creating where missing) the tables, items with embeddings of `dim` floats.
        A writer takes the lease first: BankInUse names the holder when another process has it.
        The recorded files are checked first (bank_checksums): BankDamaged names one that changed;
        what the storage cannot open or write is one line too (bank_errors.open_failure)."""
        try:
            if self.lease is not None:
                self.lease.acquire()
            if self.checksums is not None:
                self.checksums.verify()
            self.items = self._open_table(ITEMS, item_schema(dim))
            self.log = self._open_table(LOG, LOG_SCHEMA)
            self.meta = self._open_table(META, META_SCHEMA)
            if not self.read_only or self._has_table(HISTORY):  # banks before issue 26.6 have none
                self.history = self._open_table(HISTORY, LOG_SCHEMA)
            self.record_checksums()  # a killed writer's newest files, and a new bank's
        except BaseException as exc:
            self.close()
            if isinstance(exc, Exception):
                raise open_failure(exc, self.uri) from exc
            raise

    def close(self) -> None:
        """Give up the lease (the tables need no closing)."""
        if self.lease is not None:
            self.lease.release()

    def record_checksums(self) -> None:
        """Record the checksums of the files written since the last record (a writer, a local bank)."""
        if self.checksums is not None and not self.read_only:
            self.checksums.record()

    def _writable(self) -> None:
        if self.read_only:
            raise BankReadOnly(f"the memory bank {self.uri} was opened read-only")

    def _open_table(self, name: str, schema: pa.Schema) -> Any:
        """Open or create a table. A table written by an older version is brought up to `schema`:
        columns added since are appended as nulls (a metadata change, no rewrite), in schema order,
        which is the order they were appended to the schemas. (`create_table(exist_ok=True)`
        refuses an existing table whose schema differs, hence the two paths.) Read-only: the
        table as it is (readers take missing columns as nulls)."""
        if self.read_only:
            if not self._has_table(name):
                raise BankReadOnly(f"no memory bank at {self.uri} (table {name} missing)")
            return self.db.open_table(name)
        if not self._has_table(name):
            return self.db.create_table(name, schema=schema, exist_ok=True)  # exist_ok: a racing opener
        table = self.db.open_table(name)
        present = set(table.schema.names)
        missing = [field for field in schema if field.name not in present]
        if missing:
            table.add_columns(missing)
        return table

    def _has_table(self, name: str) -> bool:
        return name in self.db.list_tables().tables

    def exists(self) -> bool:
        """Whether a bank was created at this URI (opening one creates it)."""
        return self._has_table(META)

    def stored_dim(self) -> int | None:
        """The embedding dimension of an existing bank's items table."""
        if not self._has_table(ITEMS):
            return None
        return self.db.open_table(ITEMS).schema.field("embedding").type.list_size

    # -- meta ---------------------------------------------------------------------------------
    def read_meta(self) -> dict[str, Any]:
        rows = self.meta.to_arrow().to_pylist()
        return {row["key"]: json.loads(row["value"]) for row in rows}

    @_writes
    def write_meta(self, values: dict[str, Any]) -> None:
        data = pa.table({"key": list(values), "value": [json.dumps(v) for v in values.values()]}, schema=META_SCHEMA)
        self.meta.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(data)

    # -- items --------------------------------------------------------------------------------
    def read_items(self) -> pa.Table:
        return self.items.to_arrow()

    @_writes
    def add_items(self, table: pa.Table) -> None:
        """Append items whose ids are new (the caller checked)."""
        self.items.add(table)

    @_writes
    def upsert_items(self, table: pa.Table) -> None:
        """Insert new items and overwrite existing ones (by id) in one commit."""
        if table.num_rows:
            self.items.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(table)

    # -- log ----------------------------------------------------------------------------------
    @_writes
    def append_log(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.log.add(pa.Table.from_pylist(rows, schema=LOG_SCHEMA))

    def read_log(self) -> pa.Table:
        return self.log.to_arrow().sort_by("seq")

    @_writes
    def delete_log(self, where: str) -> None:
        self.log.delete(where)

    # -- history ------------------------------------------------------------------------------
    @_writes
    def archive_log(self, upto_seq: int, keep: int) -> None:
        """Copy the log's update, slot and retract rows up to UPTO_SEQ into history (those it
        does not hold yet: a fold that crashed after this step is redone), keeping its newest
        KEEP rows. Called by a fold before it deletes those rows from the log."""
        held = np.sort(self.history.search().select(["seq"]).limit(None).to_arrow()["seq"].to_numpy())
        table = self.log.to_arrow()
        fresh = pc.and_(pc.greater(table["seq"], int(held[-1]) if len(held) else 0),
                        pc.less_equal(table["seq"], upto_seq))
        rows = table.filter(pc.and_(fresh, pc.is_in(table["type"], pa.array(HISTORY_TYPES))))
        if rows.num_rows:
            self.history.add(rows.select(LOG_SCHEMA.names).cast(LOG_SCHEMA))
        seqs = np.concatenate([held, np.sort(rows["seq"].to_numpy())])
        if len(seqs) > keep:
            self.history.delete(f"seq < {int(seqs[len(seqs) - keep]) if keep else int(seqs[-1]) + 1}")

    def read_history(self) -> pa.Table:
        """The folded update rows kept (empty for a bank without the table)."""
        if self.history is None:
            return LOG_SCHEMA.empty_table()
        return self.history.to_arrow().sort_by("seq")

    # -- maintenance --------------------------------------------------------------------------
    @_writes
    def compact(self, retention_s: float, tables: tuple[str, ...] = (ITEMS, LOG, META, HISTORY)) -> None:
        """Merge small files and drop table versions older than the retention window."""
        with warnings.catch_warnings():
            # retention 0 is a deliberate choice (a bank with no other readers); lancedb warns about it
            warnings.filterwarnings("ignore", message="optimize.cleanup_older_than=0")
            for table in (getattr(self, name) for name in tables):
                if table is not None:
                    table.optimize(cleanup_older_than=timedelta(seconds=retention_s))

    def versions(self) -> dict[str, int]:
        tables = ((ITEMS, self.items), (LOG, self.log), (META, self.meta), (HISTORY, self.history))
        return {name: len(table.list_versions()) for name, table in tables if table is not None}

    def size_bytes(self) -> int:
        """Bytes under the bank's URI, through pyarrow's filesystems (local or object store)."""
        fs, root = filesystem_of(self.uri)
        infos = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
        return sum(info.size or 0 for info in infos if info.type == pafs.FileType.File)

    def copy_to(self, dest: str) -> None:
        """Copy every file under the bank's URI to DEST (a folder or an object-store prefix)."""
        source_fs, source = filesystem_of(self.uri)
        dest_fs, target = filesystem_of(dest)
        pafs.copy_files(source, target, source_filesystem=source_fs, destination_filesystem=dest_fs)


def filesystem_of(uri: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow's filesystem and path for a URI; a plain path is a local folder."""
    try:
        return pafs.FileSystem.from_uri(uri)
    except (pa.ArrowInvalid, ValueError):
        return pafs.LocalFileSystem(), os.path.abspath(uri)
