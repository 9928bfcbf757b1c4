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

A deleted (or unreadable) record must not turn the checks off silently (issue 55): beside the
record, each table folder gets a marker, `.evokernel-checksummed`, once its files are recorded.
A bank whose tables carry the marker and whose record is gone is refused in one line. To accept
its files as they are (recorded afresh by the next writer), delete the markers too: two
deliberate deletions, never an accident's one.
"""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import structlog

from memory_actor.disk.bank_errors import BankDamaged, bank_place, damage, write_failure

log = structlog.get_logger("evokernel.memory.checksums")

SUMS_FILE = "checksums.json"
MARKER = ".evokernel-checksummed"  # in each table folder: its files were recorded once
MUTABLE = {"latest_version_hint.json"}
CHECK_THREADS = 4  # files hashed at once at opening
GONE = "gone"


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
        self.lost: str | None = None  # why the record of a bank that had one cannot be used
        self.sums: dict[str, dict[str, int | str]] = self._load()

    def _load(self) -> dict[str, dict[str, int | str]]:
        try:
            record = json.loads(self.path.read_text(encoding="utf-8"))
            files = record["files"]
            if not isinstance(files, dict):
                raise ValueError("files is not a mapping")
            return files
        except FileNotFoundError:
            self.lost = "is gone" if self._marked() else None
            return {}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            if self._marked():
                self.lost = f"cannot be read ({type(exc).__name__})"
            else:  # a record that never fully existed: the writer records the files afresh
                log.warning("bank checksums unreadable: recorded afresh", path=str(self.path), error=str(exc)[:200])
            return {}

    def _marked(self) -> list[Path]:
        return sorted(self.root.glob(f"*.lance/{MARKER}"))

    def verify(self) -> int:
        """Check every recorded file still there; BankDamaged names the first that differs.
        Returns the number of files checked."""
        if self.lost is not None:
            raise BankDamaged(
                f"the memory bank {bank_place(self.uri)} is damaged: it had checksums and its {SUMS_FILE} {self.lost}, so its files "
                f"cannot be checked for damage; restore {SUMS_FILE} from a copy, or, to accept the files as they are "
                f"now, delete the {MARKER} files in its *.lance folders too")
        # The files are read in parallel (hashing releases the GIL): at a million items, about half
        # of the memory actor's start was this check, one file after another (issue 68)
        entries = sorted(self.sums.items())
        workers = max(1, min(CHECK_THREADS, os.cpu_count() or 1, len(entries)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bank-checksums") as pool:
            problems = list(pool.map(lambda entry: self._problem(*entry), entries))
        for problem in problems:  # the first in name order, whatever thread found it first
            if problem not in (None, GONE):
                raise damage(self.uri, problem)
        return sum(problem is None for problem in problems)

    def _problem(self, relative: str, expected: dict[str, int | str]) -> str | None:
        """Why one recorded file differs from its record; None when it matches, GONE when removed
        by a compaction since the record (a file still needed fails to open)."""
        path = self.root / relative
        try:
            size = path.stat().st_size
            if size != expected["size"]:
                return f"{relative} has {size} bytes, {expected['size']} were written (truncated or overwritten)"
            if digest(path) != expected["sha256"]:
                return f"{relative} does not match its checksum (changed after it was written)"
        except FileNotFoundError:
            return GONE
        return None

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
            self._mark()  # a bank recorded before the markers existed gets them too
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
        self._mark()

    def _mark(self) -> None:
        """Each table folder's marker, after the record (a marker never precedes its record)."""
        for table in self.root.glob("*.lance"):
            if not (table / MARKER).exists():
                try:
                    (table / MARKER).touch()
                except OSError as exc:
                    raise write_failure(exc, self.uri) from None
