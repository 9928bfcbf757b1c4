"""`ray up` for real (slow): examples/cluster-cpu.yaml brought up, used and taken down by Ray's
cluster launcher on three hosts made on this machine (scripts/local_cluster.py: network
namespaces on a private bridge, one sshd each). docs/scale_out.md's walkthrough is this sequence.

Every address involved is one the script made (10.213.46.0/24 on its bridge) or loopback; the
scripted OpenAI endpoint (tests/actors/openai_server.py, on loopback) is reached by the nodes
through a relay on the bridge address. Needs root; tools the hosts need are apt-installed when
missing, and the test skips, saying why, when that or a network namespace is impossible. It
prints how long each phase took (`phases:`), and the launcher's transcript.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.actors.openai_server import OpenAITestServer
from tests.launch.cluster_hosts import (
    NAMESPACES,
    can_make_hosts,
    left_in_hosts,
    ssh_to_hosts,
)
from tests.launch.kernel_agent import SUITE_TASKS, ElementwiseAgent

# Well above the 15 minutes it should take (the default 600 s would cut it short).
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[2]
CLUSTER = "examples/cluster-cpu.yaml"
HOSTS = [sys.executable, "scripts/local_cluster.py"]
STATE = Path("/var/tmp/evokernel-local-cluster")
SHARED = STATE / "shared"  # /mnt/shared/evokernel on every node
BRIDGE_ADDRESS, HEAD, WORKERS = "10.213.46.1", "10.213.46.10", ("10.213.46.11", "10.213.46.12")
LOSSES = ("NodeDiedError:", "ActorUnavailableError:", "ActorDiedError:", "WorkerCrashedError:")
PHASES: dict[str, float] = {}  # phase -> seconds, printed at the end


@contextmanager
def phase(name: str):
    started = time.monotonic()
    try:
        yield
    finally:
        PHASES[name] = round(time.monotonic() - started, 1)


FAST = ("--set harness.compile_baseline=false --set harness.timed_trials=3 --set harness.warmup_trials=1 "
        "--set harness.correctness_trials=2 --set harness.profile_input_sets=1 --set llm.candidate_format=kernel")


class Launcher:
    """Runs commands from the repository root as a user would, with this test's own HOME (its
    token, its wheelhouse link) and this environment's `ray` first on PATH; keeps a transcript."""

    def __init__(self, home: Path, transcript: Path):
        # Autoscaler v1: v2 (Ray's default for `ray up`) counts the local provider's head against
        # max_workers and never starts the last listed worker (docs/scale_out.md).
        self.env = {**os.environ, "HOME": str(home), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                    "RAY_AUTH_MODE": "token", "RAY_UP_enable_autoscaler_v2": "0"}
        for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
            self.env.pop(name, None)
        self.transcript = transcript

    def __call__(self, command: list[str], timeout_s: float = 300, check: bool = True) -> subprocess.CompletedProcess:
        started = time.monotonic()
        done = subprocess.run(command, cwd=REPO, env=self.env, capture_output=True, text=True, timeout=timeout_s)
        with self.transcript.open("a") as out:
            out.write(f"$ {' '.join(command)}    # {time.monotonic() - started:.0f} s, exit {done.returncode}\n"
                      f"{done.stdout[-6000:]}{done.stderr[-3000:]}\n")
        if check and done.returncode != 0:
            raise AssertionError(f"{command} exited {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
        return done


class Relay:
    """TCP from the bridge address to a loopback port: the nodes' way to the scripted endpoint."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self.server = socket.create_server((BRIDGE_ADDRESS, 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.server.close()


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    if reason := can_make_hosts():
        pytest.skip(reason)
    # from nothing: an earlier run's nodes and shared folder (bank, runs) go first
    with phase("hosts up"):
        subprocess.run([*HOSTS, "down", "--purge"], cwd=REPO, check=True, capture_output=True, timeout=900)
        installed = subprocess.run([*HOSTS, "up", "--install"], cwd=REPO, capture_output=True, text=True, timeout=600)
    if installed.returncode != 0 and "apt-get" in installed.stderr:
        pytest.skip(f"the hosts' tools could not be installed: {installed.stderr.strip()[-500:]}")
    assert installed.returncode == 0, installed.stderr
    try:
        yield
    finally:
        _keep_head_logs()
        with phase("hosts down"):
            subprocess.run([*HOSTS, "down", "--purge"], cwd=REPO, capture_output=True, timeout=900)
        print(f"phases: {json.dumps(PHASES)}; total {sum(PHASES.values()):.0f} s")
        assert not any(ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
                       for ns in NAMESPACES)
        sshd = subprocess.run(["pgrep", "-af", str(STATE)], capture_output=True, text=True).stdout
        assert not sshd.strip(), f"an sshd of the test is still running: {sshd}"
        assert not ssh_to_hosts(30), ssh_to_hosts(0)
        assert str(STATE) not in Path("/proc/mounts").read_text(), "a node's disk is still mounted"


def _keep_head_logs() -> None:
    """The head's Ray logs (its disk goes with the hosts), for a look after a failed run."""
    ray_tmp = STATE / NAMESPACES[0] / "tmp" / "ray"
    latest = ray_tmp / "session_latest"  # a link to the node's own /tmp/ray/session_...: read, not followed
    logs = ray_tmp / Path(os.readlink(latest)).name / "logs" if latest.is_symlink() else None
    transcripts = list(Path(tempfile.gettempdir()).glob("pytest-of-*/pytest-*/launcher-home*/transcript.txt"))
    if transcripts:  # this run's: the newest
        shutil.copy(max(transcripts, key=lambda t: t.stat().st_mtime), "/var/tmp/evokernel-ray-up-transcript.txt")
    if logs is not None and logs.is_dir():
        subprocess.run(["rsync", "-a", "--delete", f"{logs}/", "/var/tmp/evokernel-ray-up-logs/"], capture_output=True)


@pytest.fixture(scope="module")
def launcher(hosts, tmp_path_factory):
    home = tmp_path_factory.mktemp("launcher-home")
    run = Launcher(home, home / "transcript.txt")
    # The nodes' packages: the wheelhouse the script builds from .venv, in the real user's cache
    # (it only adds what is missing), linked where the cluster file's file_mounts looks.
    with phase("wheelhouse"):
        subprocess.run(["bash", "scripts/cluster_wheelhouse.sh"], cwd=REPO, check=True, capture_output=True,
                       timeout=900)
    (home / ".cache" / "evokernel").mkdir(parents=True)
    (home / ".cache" / "evokernel" / "wheelhouse").symlink_to(Path.home() / ".cache" / "evokernel" / "wheelhouse")
    # Ray writes the token readable by everyone (644): private before anything copies it.
    run(["bash", "-c", "ray get-auth-token --generate && chmod 600 ~/.ray/auth_token"])
    assert (home / ".ray" / "auth_token").stat().st_mode & 0o777 == 0o600
    yield run
    print(f"transcript: {run.transcript}\n{run.transcript.read_text()[-20000:]}")


def _http(url: str, token: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""
    except OSError:
        return 0, b""


def _wait_for(predicate, timeout_s: float, what: str, every_s: float = 3.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if found := predicate():
            return found
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def _three_nodes(launcher: Launcher) -> str | None:
    status = launcher(["ray", "exec", CLUSTER, "ray status"], timeout_s=120, check=False).stdout
    return status if "0/6.0 CPU" in status and " 3 local.cluster.node" in status else None


class Dashboard:
    """`ray dashboard` (an SSH tunnel to the head's loopback dashboard) on a free local port."""

    def __init__(self, launcher: Launcher, token: str):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url, self.token = f"http://127.0.0.1:{self.port}", token
        self.process = subprocess.Popen(["ray", "dashboard", "--port", str(self.port), CLUSTER], cwd=REPO,
                                        env=launcher.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True)

    def get(self, path: str) -> dict:
        status, body = _http(self.url + path, self.token)
        assert status == 200, (path, status)
        return json.loads(body)

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)


def _submit(launcher: Launcher, dashboard: Dashboard, job: str, llm_url: str, out: str, extra: str = "") -> None:
    # (the suite: the bundled one of the node's copy, ~/evokernel/suites/cpu)
    launcher(["ray", "job", "submit", "--address", dashboard.url, "--submission-id", job, "--no-wait", "--",
              *f"evokernel run --tasks {','.join(SUITE_TASKS)} --cpus-per-device 2 --llm-base-url {llm_url} "
               f"--llm-model test-model --out {out} {FAST} {extra}".split()])


def _job_end(launcher: Launcher, dashboard: Dashboard, job: str, timeout_s: float) -> tuple[str, str]:
    """The job's final status and its whole log (the driver's output)."""
    def ended() -> str | None:
        status = dashboard.get(f"/api/jobs/{job}")["status"]
        return status if status in ("SUCCEEDED", "FAILED", "STOPPED") else None

    status = _wait_for(ended, timeout_s, f"job {job}", every_s=3)
    return status, launcher(["ray", "job", "logs", "--address", dashboard.url, job]).stdout


def _placement(dashboard: Dashboard) -> tuple[dict[str, str], set[str]]:
    """Node id -> address, and the addresses every memory actor so far ran at (from the state
    API, through the tunnel)."""
    nodes = {n["node_id"]: n["node_ip"] for n in dashboard.get("/api/v0/nodes?limit=100")["data"]["result"]["result"]}
    actors = dashboard.get("/api/v0/actors?detail=true&limit=1000")["data"]["result"]["result"]
    memory = {nodes[a["node_id"]] for a in actors if a["class_name"] == "MemoryActor"}
    assert memory, "no memory actor was ever started"
    return nodes, memory


def _token_modes(launcher: Launcher) -> dict[str, str]:
    """The token's mode and its folder's on every node (the head through `ray exec`, the
    workers' homes from this machine, where their disks are mounted)."""
    head = launcher(["ray", "exec", CLUSTER, "echo token-modes $(stat -c %a ~/.ray ~/.ray/auth_token)"]).stdout
    modes = {HEAD: head.rsplit("token-modes ", 1)[1].splitlines()[0].strip()}  # (the log line echoes the command)
    for ns, address in zip(NAMESPACES[1:], WORKERS, strict=True):
        folder = STATE / ns / "home" / ".ray"
        modes[address] = f"{folder.stat().st_mode & 0o777:o} {(folder / 'auth_token').stat().st_mode & 0o777:o}"
    return modes


def _bank_traces() -> int:
    from memory_actor.bank import MemoryBank
    from memory_actor.config import MemoryConfig

    bank = MemoryBank(MemoryConfig(uri=str(SHARED / "memory"), preload_embedder=False), read_only=True)
    return sum(item.kind == "trace" for item in bank.items.values())


def _attempts(run: str) -> list[dict]:
    return [json.loads(line) for line in (SHARED / "runs" / run / "attempts.jsonl").read_text().splitlines()]


def test_ray_up_runs_a_campaign_over_three_hosts_survives_a_lost_worker_and_comes_down(launcher, tmp_path):
    # 1. `ray up` sets up every node from scratch (the workers through the head's autoscaler).
    with phase("ray up (head)"):
        launcher(["ray", "up", "-y", CLUSTER], timeout_s=900)
    with phase("workers set up"):
        status = _wait_for(lambda: _three_nodes(launcher), 900, "three nodes in `ray status`", every_s=10)
    assert "0.0/6.0 CPU" in status
    token = (Path(launcher.env["HOME"]) / ".ray" / "auth_token").read_text().strip()
    assert _token_modes(launcher) == dict.fromkeys((HEAD, *WORKERS), "700 600")  # private on every node
    on_head = launcher(["ray", "exec", CLUSTER, "echo $EVOKERNEL_MEMORY__URI $RAY_grpc_client_keepalive_time_ms"]).stdout
    assert "/mnt/shared/evokernel/memory 20000" in on_head

    # 2. The dashboard, forwarded from the head's loopback, asks for the token.
    dashboard = Dashboard(launcher, token)
    relay = None
    try:
        _wait_for(lambda: _http(dashboard.url + "/api/version")[0] == 401, 60, "the forwarded dashboard")
        assert _http(dashboard.url + "/api/version", token)[0] == 200
        with OpenAITestServer() as server:
            server.responder = ElementwiseAgent()
            relay = Relay(server.port)
            llm_url = f"http://{BRIDGE_ADDRESS}:{relay.port}/v1"

            # 3. A campaign as a Ray job: every operator done, spread over nodes, memory on the head.
            with phase("job 1 (4 operators x 2)"):
                _submit(launcher, dashboard, "evk46-first", llm_url, "/mnt/shared/evokernel/runs/first",
                        "--iterations 2")
                end, logs = _job_end(launcher, dashboard, "evk46-first", 900)
                assert end == "SUCCEEDED", logs[-3000:]
            summary = json.loads((SHARED / "runs" / "first" / "summary.json").read_text())
            assert summary["totals"]["operators"] == len(SUITE_TASKS) and summary["totals"]["errors"] == 0
            assert summary["totals"]["feasible"] == len(SUITE_TASKS) and summary["finished_at"]
            nodes, memory_at = _placement(dashboard)
            episode_hosts = {nodes[node] for node in summary["placement"]["episodes"].values()}
            assert len(episode_hosts) > 1, summary["placement"]
            evaluated_on = {nodes[d["node_id"]] for d in summary["placement"]["devices"] if d["evaluations"]}
            assert len(evaluated_on) > 1, summary["placement"]
            assert memory_at == {HEAD}, memory_at  # pinned to the driver's node (memory_actor.actor_handle)
            first_attempts = _attempts("first")
            assert _bank_traces() == len(first_attempts) == 2 * len(SUITE_TASKS)

            # 4. A worker cut off (its link down) in the middle of a second campaign.
            server.responder = ElementwiseAgent(delay_s=4.0)
            with phase("job 2 (worker cut off)"):
                _submit(launcher, dashboard, "evk46-cut", llm_url, "/mnt/shared/evokernel/runs/cut", "--iterations 3")
                attempts = SHARED / "runs" / "cut" / "attempts.jsonl"
                _wait_for(lambda: attempts.exists() and attempts.read_text().strip(), 600,
                          "the second run's first attempt", every_s=1)
                subprocess.run([*HOSTS, "link", NAMESPACES[2], "down"], cwd=REPO, check=True)
                try:
                    end, logs = _job_end(launcher, dashboard, "evk46-cut", 900)
                finally:
                    subprocess.run([*HOSTS, "link", NAMESPACES[2], "up"], cwd=REPO, check=True)
            _, memory_at = _placement(dashboard)
    finally:
        if relay is not None:
            relay.close()
        dashboard.close()
    cut = json.loads((SHARED / "runs" / "cut" / "summary.json").read_text())
    assert cut["finished_at"] and not cut["interrupted"]
    assert sorted(o["task"] for o in cut["operators"]) == sorted(SUITE_TASKS)  # none silently missing
    # The operators whose episode went with the node ran again on the others and finished there.
    lost = cut["lost_tries"]
    print(f"cut-off run: {len(lost)} operator(s) lost and run again: {lost}")
    assert lost, "no episode was lost: SPREAD placed none of the four on the cut worker?"
    # each lost once: with its node (NodeDiedError, naming it) or an actor there (an LLM worker,
    # the device pool: ActorUnavailableError, ActorDiedError), then ran again to its end
    assert all(len(tries) == 1 and tries[0].startswith(LOSSES) for tries in lost.values()), lost
    assert any(WORKERS[1] in tries[0] for tries in lost.values()), lost
    assert end == "SUCCEEDED" and cut["totals"]["errors"] == 0, [o.get("error") for o in cut["operators"]]
    assert all(o["feasible"] and o["stopped_by"] == "iterations" for o in cut["operators"]), cut["operators"]
    assert all(nodes[cut["placement"]["episodes"][task]] != WORKERS[1] for task in lost), cut["placement"]
    assert all(f"{task} was lost with its node, running it again" in logs for task in lost)
    assert memory_at == {HEAD}, memory_at
    # nothing lost in the bank: one trace per recorded attempt (a lost try's included), both runs
    assert _bank_traces() == len(first_attempts) + len(_attempts("cut"))

    # 5. `ray down` leaves nothing of Ray and no SSH session on any host; a second `ray up` works
    # on the same hosts (setup again, finding everything installed).
    with phase("ray down"):
        launcher(["ray", "down", "-y", CLUSTER], timeout_s=300)
        assert not left_in_hosts(), left_in_hosts(0)
    with phase("second ray up"):
        launcher(["ray", "up", "-y", CLUSTER], timeout_s=600)
        _wait_for(lambda: _three_nodes(launcher), 600, "three nodes after the second `ray up`", every_s=10)
    with phase("second ray down"):
        launcher(["ray", "down", "-y", CLUSTER], timeout_s=300)
        assert not left_in_hosts(), left_in_hosts(0)
    assert not ssh_to_hosts(), ssh_to_hosts(0)
