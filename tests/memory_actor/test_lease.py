"""One writer per bank (memory_actor.disk.lease), seeding once, clear errors for unusable paths, and
read-only inspection that writes nothing: real banks, real processes, a real read-only mount."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from memory_actor.bank import MemoryBank
from memory_actor.config import MemoryConfig
from memory_actor.disk.lease import LOCK_FILE, BankInUse, BankUnusable, check_writable, probe
from memory_actor.disk.store import BankReadOnly
from memory_actor.items import MemoryItem
from memory_actor.seeding import bundle_items, seed_fresh_bank

HOLDER = """
import sys
from memory_actor.bank import MemoryBank
from memory_actor.config import MemoryConfig
bank = MemoryBank(MemoryConfig(uri=sys.argv[1], preload_embedder=False), owner="evokernel run holder-run")
print("holding", flush=True)
sys.stdin.read()
bank.close()
"""


@contextlib.contextmanager
def holder(uri: str):
    """A second process that writes the bank until the block ends (or it is killed)."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, uri], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, cwd=Path(__file__).resolve().parents[2])
    try:
        for line in process.stdout:  # structlog's default logger prints to stdout first
            if line.strip() == "holding":
                break
        else:
            pytest.fail("the holder process did not open the bank")
        yield process
    finally:
        if process.poll() is None:
            process.stdin.close()
            process.wait(30)


def _config(tmp_path: Path, name: str = "bank") -> MemoryConfig:
    return MemoryConfig(uri=str(tmp_path / name), preload_embedder=False)


def test_a_second_writer_is_refused_with_who_holds_the_bank(tmp_path):
    config = _config(tmp_path)
    with holder(config.uri) as process:
        with pytest.raises(BankInUse) as refused:
            MemoryBank(config)
        message = str(refused.value)
        assert "evokernel run holder-run" in message and f"pid {process.pid}" in message and "\n" not in message
        with pytest.raises(BankInUse):
            probe(config.uri)
        assert MemoryBank(config, read_only=True).items == {}  # a reader is never refused
        process.send_signal(signal.SIGKILL)  # however the holder dies, the kernel drops its lock
        process.wait(30)
    bank = MemoryBank(config, owner="the next run")
    bank.close()
    assert (Path(config.uri) / LOCK_FILE).read_text() == ""  # released: no stale holder named


def test_one_process_may_open_its_bank_twice(tmp_path):
    config = _config(tmp_path)
    first, second = MemoryBank(config), MemoryBank(config)
    first.close()
    with holder_refused(config.uri):
        pass
    second.close()
    probe(config.uri)  # free again


@contextlib.contextmanager
def holder_refused(uri: str):
    """While this process holds the bank, another process cannot write it."""
    result = subprocess.run([sys.executable, "-c", HOLDER, uri], input="", capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert result.returncode != 0 and "BankInUse" in result.stderr and f"pid {os.getpid()}" in result.stderr
    yield


def _seed(uri: str, owner: str) -> int | str:
    try:
        return seed_fresh_bank(MemoryConfig(uri=uri, preload_embedder=False), "cpu", owner)
    except BankInUse as exc:
        return str(exc)


def test_two_runs_seeding_one_bank_at_once_add_each_item_once(tmp_path, minilm):
    uri = str(tmp_path / "bank")
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(_seed, [uri, uri], ["run a", "run b"]))
    expected = len(bundle_items("cpu"))
    assert sorted(r for r in results if isinstance(r, int)) in ([0, expected], [expected])
    assert all("is in use by run" in r for r in results if isinstance(r, str))  # the other run is refused
    ids = MemoryBank(MemoryConfig(uri=uri, preload_embedder=False), read_only=True).items_table().column("id")
    assert len(ids) == expected and len(set(ids.to_pylist())) == expected
    assert _seed(uri, "run c") == 0  # seeding again adds nothing


def test_unusable_bank_paths_are_one_clear_line(tmp_path):
    a_file = tmp_path / "bank-file"
    a_file.write_text("not a bank")
    with pytest.raises(BankUnusable, match="is a file, not a folder"):
        check_writable(str(a_file))
    with pytest.raises(BankUnusable, match="which is a file"):
        check_writable(str(a_file / "inner"))
    with pytest.raises(BankUnusable, match="is a file"):
        MemoryBank(MemoryConfig(uri=str(a_file), preload_embedder=False))
    check_writable(str(tmp_path / "new" / "bank"))  # created on first use


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to an unprivileged user needs root")
def test_a_bank_without_write_permission_is_refused():
    """As root a chmod stops nothing: the check runs in a child process that became user nobody.

    The folders live in a fresh world-traversable folder under /tmp (pytest's own are root-only),
    so only the locked folder's mode can refuse, and the open one shows that nobody could write."""
    with tempfile.TemporaryDirectory(prefix="evokernel-lease-") as folder:
        root = Path(folder)
        root.chmod(0o755)
        locked, open_ = root / "locked", root / "open"
        locked.mkdir()
        open_.mkdir()
        locked.chmod(0o555)
        open_.chmod(0o777)
        assert _as_nobody(check_writable, str(open_ / "bank")) == ""
        assert "no permission to write the memory bank" in _as_nobody(check_writable, str(locked / "bank"))
        assert "no permission to write the memory bank" in _as_nobody(check_writable, str(locked))


def _as_nobody(check, path: str) -> str:
    """What `check(path)` raised in a fresh child process running as user nobody ('' when nothing).

    Spawned, not forked: by now this process may hold Ray's and LanceDB's threads, and a forked copy
    of them crashed in malloc (CI, 2026-12-02). The child imports as root, then drops to nobody, so
    the checkout need not be readable by nobody."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_check_as_nobody, check, path).result(timeout=120)


def _check_as_nobody(check, path: str) -> str:
    os.setgid(65534)
    os.setuid(65534)
    try:
        check(path)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        return str(exc)
    return ""


def _written_bank(tmp_path: Path) -> MemoryConfig:
    config = _config(tmp_path, "src")
    bank = MemoryBank(config)
    bank.add([MemoryItem(id="practice-softmax", kind="practice", backend="cpu", summary="stable softmax",
                         content="subtract the running max per row", embedding=[1.0] + [0.0] * 383)])
    bank.close()
    return config


def _listing(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_a_read_only_bank_refuses_writes_and_writes_nothing_on_close(tmp_path):
    config = _written_bank(tmp_path)
    before = _listing(Path(config.uri))
    bank = MemoryBank(config, read_only=True)
    assert bank.get("practice-softmax").summary == "stable softmax"
    bank.stats()
    with pytest.raises(BankReadOnly):
        bank.add([MemoryItem(kind="practice", backend="cpu", summary="x", content="x", embedding=[1.0] * 384)])
    with pytest.raises(BankReadOnly):
        bank.flush(fold=True)
    bank.close()
    assert _listing(Path(config.uri)) == before


@contextlib.contextmanager
def read_only_mount(source: Path, target: Path):
    """A real read-only bind mount of SOURCE at TARGET (root only; skipped where mounting is not allowed)."""
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    target.mkdir()
    try:
        subprocess.run(["mount", "--bind", str(source), str(target)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("mounting is not allowed here")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], check=True, capture_output=True)
        yield target
    finally:
        subprocess.run(["umount", str(target)], check=False, capture_output=True)


def test_inspection_commands_work_on_a_read_only_file_system(tmp_path, capsys, minilm):
    from launch.cli import main

    config = _written_bank(tmp_path)
    before = _listing(Path(config.uri))
    with read_only_mount(Path(config.uri), tmp_path / "ro") as ro:
        bank = str(ro)
        assert main(["memory", "--memory", bank, "stats"]) == 0
        assert main(["memory", "--memory", bank, "search", "softmax"]) == 0
        assert "practice-softmax" in capsys.readouterr().out
        assert main(["memory", "--memory", bank, "show", "practice-softmax"]) == 0
        assert main(["memory", "--memory", bank, "export", str(tmp_path / "out.jsonl")]) == 0
        assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 2
        capsys.readouterr()
        assert main(["memory", "--memory", bank, "seed", "cpu"]) == 2  # writing is refused in one line
        err = capsys.readouterr().err.strip()
        assert "read-only file system" in err and len(err.splitlines()) == 1
        with pytest.raises(BankUnusable, match="read-only file system"):
            probe(bank)
    assert _listing(Path(config.uri)) == before
