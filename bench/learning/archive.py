"""A published run's raw state, kept beside its tables: bench/results/<run>/raw.tar.xz, whose
sha256 raw.json records, and the commands that make and unpack it (`rederive`, which computes
a published run's tables again from it, is bench/learning/summary.py's).

The archive holds the results folder as the run left it (plan.json, screening.json,
frozen.json, arms/*/attempts.jsonl and summary.json, the banks) except each run folder's
report/ (HTML and plots that `evokernel report <run folder>` writes again from the same files).
It is deterministic: members in sorted order, mtime 0, owner root, modes 0644/0755, xz -9e, so
packing the same folder again gives the same bytes and the same digest.

    python -m bench.learning pack runs/learning-v3-npu-twin bench/results/<run>
    python -m bench.learning unpack bench/results/<run> --to /tmp/<run>      # the digest checked first
    python -m bench.learning unpack bench/results/<run> --to DIR --only 'arms/*/attempts.jsonl'

A resume or re-analysis works on the unpacked folder (`python -m bench.learning --out DIR
--summary-so-far`, or the run's own command with `--out DIR`), never inside the tracked tree.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import lzma
import os
import shutil
import tarfile
from pathlib import Path
from typing import Any

from bench.learning.publish import file_sha256, publish_folder
from bench.learning.resume import portable

ARCHIVE = "raw.tar.xz"
MANIFEST = "raw.json"
EXCLUDED = "report"  # arms/<run>/report/: derived, `evokernel report` writes it again
REPOSITORY = Path(__file__).resolve().parents[2]


def as_named(result: Path) -> Path:
    """A published run's folder as a checkout names it (bench/results/<run>), wherever this one is."""
    try:
        return result.resolve().relative_to(REPOSITORY)
    except ValueError:
        pass
    resolved = result.resolve()
    if resolved.parent.name == "results" and resolved.parent.parent.name == "bench":
        # another checkout's bench/results/ (a benchmark clone packing into main's): named as main names it
        return Path("bench/results") / resolved.name
    return result  # outside any checkout (a test's folder): named as given


def _members(folder: Path) -> list[Path]:
    """Every file and folder under `folder` in sorted order, without the run folders' report/."""
    found = []
    for root, dirs, files in os.walk(folder):
        here = Path(root)
        dirs[:] = sorted(d for d in dirs if not (d == EXCLUDED and here.parent.name == "arms"))
        found += [here / d for d in dirs] + [here / f for f in sorted(files)]
    return sorted(found, key=lambda p: p.relative_to(folder).parts)


def pack(folder: Path, result: Path, source: str | None = None) -> dict[str, Any]:
    """Archive the results folder `folder` into `result`/raw.tar.xz and write raw.json."""
    result.mkdir(parents=True, exist_ok=True)
    target = result / ARCHIVE
    files = size = 0
    with target.open("wb") as raw, lzma.LZMAFile(raw, "wb", preset=9 | lzma.PRESET_EXTREME) as xz, \
            tarfile.open(fileobj=xz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in _members(folder):
            info = tar.gettarinfo(str(path), arcname=path.relative_to(folder).as_posix())
            if not (info.isfile() or info.isdir()):
                raise SystemExit(f"bench.learning pack: {path} is neither a file nor a folder")
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            info.mode = 0o755 if info.isdir() or info.mode & 0o111 else 0o644
            if info.isfile():
                files, size = files + 1, size + info.size
                with path.open("rb") as stream:
                    tar.addfile(info, stream)
            else:
                tar.addfile(info)
    manifest = {"archive": ARCHIVE, "sha256": file_sha256(target), "bytes": target.stat().st_size, "files": files,
                "unpacked_bytes": size, "from": source or str(folder),
                "excluded": f"arms/*/{EXCLUDED}/ (evokernel report <run folder> writes it again)",
                "unpack": f"python -m bench.learning unpack {as_named(result)} --to DIR"}
    (result / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def verified_archive(result: Path) -> Path:
    """The archive of a published run, after checking its sha256 against raw.json."""
    manifest_path = result / MANIFEST
    if not manifest_path.is_file():
        raise SystemExit(f"bench.learning: {result} keeps no raw state ({MANIFEST} missing)")
    manifest = json.loads(manifest_path.read_text())
    archive = result / manifest["archive"]
    found = file_sha256(archive) if archive.is_file() else "missing"
    if found != manifest["sha256"]:
        raise SystemExit(f"bench.learning: {archive} has sha256 {found}, {MANIFEST} records {manifest['sha256']}")
    return archive


def unpack(result: Path, to: Path, only: list[str] | None = None) -> list[str]:
    """The run's raw state into `to` (absent or empty), digest checked first; with `only`, the
    members matching any of those globs (and the folders above them). Returns the files."""
    archive = verified_archive(result)
    if to.exists() and any(to.iterdir()):
        raise SystemExit(f"bench.learning unpack: {to} is not empty")
    to.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:xz") as tar:
        members = tar.getmembers()
        if only:
            members = [m for m in members if m.isfile() and any(fnmatch.fnmatch(m.name, g) for g in only)]
        tar.extractall(to, members=members, filter="data")
    return [m.name for m in members if m.isfile()]


def publish_table(out: Path, meta: dict[str, Any], kind: str) -> Path:
    """`out`'s summary.md, summary.json and raw state (packed) into bench/results/<date>-<model>-<kind>/
    (publish_folder says which folder); the folder."""
    name = f"{meta['date'][:10]}-{str(meta['model'].get('name')).replace('/', '_')}-{kind}"
    target = publish_folder(REPOSITORY / "bench" / "results", name, out)
    target.mkdir(parents=True, exist_ok=True)
    for file in ("summary.md", "summary.json"):
        shutil.copyfile(out / file, target / file)
    pack(out, target, portable(out))
    return target


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.learning", description=__doc__.splitlines()[0])
    commands = p.add_subparsers(dest="command", required=True)
    packing = commands.add_parser("pack", help="archive a results folder into a published run's folder")
    packing.add_argument("folder", type=Path)
    packing.add_argument("result", type=Path)
    unpacking = commands.add_parser("unpack", help="a published run's raw state into a folder, digest checked")
    unpacking.add_argument("result", type=Path)
    unpacking.add_argument("--to", type=Path, default=None, help="target folder (default runs/<run>)")
    unpacking.add_argument("--only", action="append", default=None, metavar="GLOB",
                           help="members matching this glob only, e.g. 'arms/*/attempts.jsonl' (repeatable)")
    args = p.parse_args(argv)
    if args.command == "pack":
        line = {"bench": "learning", "packed": str(args.result / ARCHIVE), **pack(args.folder, args.result)}
    else:
        to = (args.to or Path("runs") / args.result.resolve().name).expanduser().resolve()
        files = unpack(args.result, to, args.only)
        line = {"bench": "learning", "unpacked": str(to), "files": len(files)}
    print(json.dumps(line))
    return 0
