"""Checksums of a local bank's files, so that a flipped byte is found, not read.

LanceDB checks a file's structure, not its bytes: a truncated file fails to parse, but most
single-byte flips in a data file are read without complaint, as changed values. Its files
are immutable once written (new data, deletion, transaction and version files get new names;
only `latest_version_hint.json` is rewritten), so the writer records each file's size and
SHA-256 in BANK/checksums.json once, and every opening, writer or reader, checks the files
recorded there first: one that differs is named in a BankDamaged line.

The writer records new files when it opens the bank (those a killed writer left), after each
fold and when it closes; files a compaction removed leave the record then. A file written
since the last record is not covered until the next one. Object-store banks are not checked
(their stores keep their own checksums).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import structlog

from memory_actor.bank_errors import damage, write_failure

log = structlog.get_logger("evokernel.memory.checksums")

SUMS_FILE = "checksums.json"
MUTABLE = {"latest_version_hint.json"}


def bank_files(root: Path) -> dict[str, int]:
    """Every immutable file of the bank's tables (relative path -> size). Hidden names (LanceDB
    writes `.tmpXXXX` and renames it when complete) and names with '#' (object_store's staging)
    are files still being written."""
    found: dict[str, int] = {}
    for table in root.glob("*.lance"):
        for folder, _, names in os.walk(table):
            for name in names:
                if name in MUTABLE or "#" in name or name.startswith("."):
                    continue
                path = Path(folder) / name
                try:
                    found[str(path.relative_to(root))] = path.stat().st_size
                except FileNotFoundError:  # removed by a compaction meanwhile
                    continue
    return found


def digest(path: Path) -> str:
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


class BankChecksums:
    """The record of one local bank folder."""

    def __init__(self, root: str | Path, uri: str):
        self.root, self.uri = Path(root), uri
        self.path = self.root / SUMS_FILE
        self.sums: dict[str, dict[str, int | str]] = self._load()

    def _load(self) -> dict[str, dict[str, int | str]]:
        try:
            record = json.loads(self.path.read_text(encoding="utf-8"))
            files = record["files"]
            if not isinstance(files, dict):
                raise ValueError("files is not a mapping")
            return files
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # Only the record is lost, not the bank: its files are recorded afresh by the writer.
            log.warning("bank checksums unreadable: recorded afresh", path=str(self.path), error=str(exc)[:200])
            return {}

    def verify(self) -> int:
        """Check every recorded file still there; BankDamaged names the first that differs.
        Returns the number of files checked."""
        checked = 0
        for relative, expected in sorted(self.sums.items()):
            path = self.root / relative
            try:
                size = path.stat().st_size
                if size != expected["size"]:
                    what = f"{relative} has {size} bytes, {expected['size']} were written (truncated or overwritten)"
                    raise damage(self.uri, what)
                if digest(path) != expected["sha256"]:
                    raise damage(self.uri, f"{relative} does not match its checksum (changed after it was written)")
            except FileNotFoundError:
                continue  # removed by a compaction since the record; a file still needed fails to open
            checked += 1
        return checked

    def record(self) -> None:
        """Add the files written since the last record, drop those removed, write the record
        (atomically: a crash leaves the old one or the new one)."""
        present = bank_files(self.root)
        sums = {name: entry for name, entry in self.sums.items() if name in present}
        for name, size in present.items():
            if name not in sums:
                try:
                    sums[name] = {"size": size, "sha256": digest(self.root / name)}
                except FileNotFoundError:
                    continue
        if sums == self.sums and self.path.exists():
            return
        partial = self.path.with_name(SUMS_FILE + ".tmp")
        try:
            with partial.open("w", encoding="utf-8") as stream:
                json.dump({"version": 1, "files": sums}, stream, sort_keys=True)
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(partial, self.path)
        except OSError as exc:
            partial.unlink(missing_ok=True)  # no empty or half file left behind
            raise write_failure(exc, self.uri) from None
        self.sums = sums
