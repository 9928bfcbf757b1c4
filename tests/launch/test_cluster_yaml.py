"""The Ray cluster launcher files pass Ray's own checks and ours (accelerators, auth, dashboard)."""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

from launch.config import load_settings
from tests.launch.local_ports import free_port

# The `ray` command of this interpreter's environment: PATH need not hold the venv.
RAY = str(Path(sys.executable).with_name("ray"))

REPO = Path(__file__).resolve().parents[2]
ACCELERATOR_FILES = [REPO / "cluster.yaml", REPO / "examples" / "cluster-aws.yaml"]
CPU_FILE = REPO / "examples" / "cluster-cpu.yaml"
CLUSTER_FILES = [*ACCELERATOR_FILES, CPU_FILE]
LOCAL_FILES = [REPO / "cluster.yaml", CPU_FILE]
ENV_FILE = "~/.evokernel/env.sh"
ACCELERATORS = ("NPU", "GPU")


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def _start_commands(config: dict) -> dict[str, list]:
    return {"head": config["head_start_ray_commands"], "worker": config["worker_start_ray_commands"]}


def _the_ray_start(commands: list[str]) -> str:
    """The one command line of a start list that runs `ray start` (others stop Ray or watch it)."""
    starts = [c for c in commands if "ray start" in c]
    assert len(starts) == 1, f"expected one `ray start` line, found {len(starts)}: {commands!r}"
    return starts[0]


def _ray_start_args(command: str) -> list[str]:
    """The arguments of the `ray start` part of a shell command line."""
    words = shlex.split(command)
    starts = [i for i in range(len(words) - 1) if words[i] == "ray" and words[i + 1] == "start"]
    assert starts, f"no `ray start` in {command!r}"
    rest = words[starts[0] + 2:]
    return rest[: rest.index("&&")] if "&&" in rest else rest


def _node_environment(config: dict, home: Path) -> dict[str, str]:
    """Run the setup command that writes the node environment file, then read its exports.

    Lines that source other files (CANN's set_env.sh, absent here) are left out; the
    exports are evaluated by bash so that $HOME expands as on a node.
    """
    writers = [c for c in config["setup_commands"] if f"> {ENV_FILE}" in c]
    assert len(writers) == 1, "exactly one setup command writes the node environment file"
    (home / ".evokernel").mkdir(parents=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(home)}
    subprocess.run(["bash", "-c", writers[0]], check=True, env=env)
    env_file = home / ".evokernel" / "env.sh"
    exports = "\n".join(line for line in env_file.read_text().splitlines() if not line.startswith("source "))
    shown = subprocess.run(["bash", "-c", f"{exports}\nenv -0"], check=True, env=env, capture_output=True, text=True)
    return dict(item.split("=", 1) for item in shown.stdout.split("\0") if "=" in item)


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=lambda p: p.name)
def test_ray_accepts_the_cluster_file(path):
    prepared = prepare_config(_load(path))
    validate_config(prepared)
    assert prepared["head_node_type"] in prepared["available_node_types"]


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=lambda p: p.name)
def test_start_commands_are_whole_strings_that_load_the_node_environment(path):
    for role, commands in _start_commands(_load(path)).items():
        for command in commands:
            # An unquoted command holding `{"NPU": 8}` would load as a mapping, not a string.
            assert isinstance(command, str), f"{role} start command is not one YAML string: {command!r}"
            assert command.startswith(f"source {ENV_FILE} && "), command


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=lambda p: p.name)
def test_dashboard_is_bound_to_the_head_loopback(path):
    config = _load(path)
    head_starts = [c for c in config["head_start_ray_commands"] if "ray start" in c]
    assert len(head_starts) == 1
    args = _ray_start_args(head_starts[0])
    assert "--head" in args
    assert "--dashboard-host=127.0.0.1" in args
    assert "0.0.0.0" not in path.read_text()


@pytest.mark.parametrize("path", ACCELERATOR_FILES, ids=lambda p: p.name)
def test_workers_declare_accelerators(path):
    config = _load(path)
    if config["provider"]["type"] == "local":
        # The local provider takes no node types: the start commands declare the resources.
        for role, commands in _start_commands(config).items():
            start = next(_ray_start_args(c) for c in commands if "ray start" in c)
            resources = [json.loads(a.split("=", 1)[1]) for a in start if a.startswith("--resources=")]
            assert resources and resources[0].get("NPU", 0) > 0, f"{role} declares no NPUs: {start}"
    else:
        # Cloud providers pass each node type's resources to `ray start` themselves.
        workers = {name: t for name, t in config["available_node_types"].items() if name != config["head_node_type"]}
        assert workers
        for name, node_type in workers.items():
            assert any(node_type["resources"].get(a, 0) > 0 for a in ACCELERATORS), f"{name} declares no accelerator"


@pytest.mark.parametrize("path", CLUSTER_FILES, ids=lambda p: p.name)
def test_every_node_gets_token_auth_and_the_shared_memory_bank(path, tmp_path, monkeypatch):
    config = _load(path)
    node_env = _node_environment(config, tmp_path)
    assert node_env["RAY_AUTH_MODE"] == "token"
    # The token comes from a file that file_mounts copies to every node, never from this file.
    assert node_env["RAY_AUTH_TOKEN_PATH"] == str(tmp_path / ".ray" / "auth_token")
    assert "~/.ray/auth_token" in config["file_mounts"]
    assert "RAY_AUTH_TOKEN=" not in path.read_text()
    assert any("chmod 600 ~/.ray/auth_token" in c for c in config["setup_commands"])
    # The memory bank is shared: an absolute path (a shared file system) or an object store.
    uri = node_env["EVOKERNEL_MEMORY__URI"]
    assert uri.startswith(("/", "s3://", "gs://", "az://")), uri
    # The variables are the ones our settings read.
    for name, value in node_env.items():
        if name.startswith("EVOKERNEL_"):
            monkeypatch.setenv(name, value)
    settings = load_settings()
    assert settings.memory.uri == uri
    assert settings.harness.backend in ("npu", "cuda", "cpu", "npu-twin")
    assert settings.ray.address == "auto"  # `evokernel run` on a node joins the cluster


def test_on_premise_nodes_install_the_project_with_torch_npu_over_cann():
    config = _load(REPO / "cluster.yaml")
    assert config["provider"]["type"] == "local"
    setup = "\n".join(config["setup_commands"])
    assert "source /usr/local/Ascend/ascend-toolkit/set_env.sh" in setup
    assert "torch-npu==" in setup
    assert 'pip install -e "$HOME/evokernel[npu]"' in setup
    assert config["file_mounts"]["~/evokernel"] == "."


@pytest.mark.parametrize("path", LOCAL_FILES, ids=lambda p: p.name)
def test_local_nodes_advertise_the_address_the_launcher_reached(path):
    """Ray's own guess of a node's address needs a default route (127.0.0.1 without one)."""
    for role, commands in _start_commands(_load(path)).items():
        start = next(c for c in commands if "ray start" in c)
        assert "set -- $SSH_CONNECTION && ray start" in start, role
        assert "--node-ip-address=$3" in _ray_start_args(start), role


def test_cpu_nodes_install_from_the_wheelhouse_that_file_mounts_ships():
    config = _load(CPU_FILE)
    assert config["file_mounts"]["~/evokernel-wheels"] == "~/.cache/evokernel/wheelhouse"
    installs = [c for c in config["setup_commands"] if "pip install" in c]
    assert installs and all("--no-index --find-links ~/evokernel-wheels" in c for c in installs)
    assert any('"ray[default]==2.60.0"' in c for c in installs)
    assert any('pip install --no-compile --no-index --find-links ~/evokernel-wheels -e "$HOME/evokernel"' in c
               for c in installs)
    assert "Ascend" not in "\n".join(config["setup_commands"])


# What the CPU file may differ in from cluster.yaml: CANN (its set_env.sh, the torch/torch-npu
# pair and the [npu] extra, the NPU check and the NPU resources, the npu backend), the package
# source (a wheelhouse rather than an index), and which machines it names.
CANN_ONLY = [
    (r"\s*'source /usr/local/Ascend/ascend-toolkit/set_env.sh'", ""),
    (r"EVOKERNEL_HARNESS__BACKEND=npu\b", "EVOKERNEL_HARNESS__BACKEND=cpu"),
    (r'"torch==[^"]+" "torch-npu==[^"]+" ', ""),
    (r"\[npu\]", ""),
    (r" --resources='\{\"NPU\": \d+\}'", ""),
    (r"pip install --upgrade pip && ", ""),
    (r"pip install --no-compile --no-index --find-links ~/evokernel-wheels ", "pip install "),
]
MACHINES = {"cluster_name", "provider", "auth"}


def _without_cann(commands: list[str]) -> list[str]:
    out = []
    for command in commands:
        if "import torch, torch_npu" in command:
            continue  # the NPU check
        for pattern, replacement in CANN_ONLY:
            command = re.sub(pattern, replacement, command)
        out.append(command)
    return out


def test_the_cpu_file_is_cluster_yaml_without_cann():
    npu, cpu = _load(REPO / "cluster.yaml"), _load(CPU_FILE)
    assert npu.keys() == cpu.keys()
    assert cpu["provider"]["type"] == npu["provider"]["type"] == "local"
    assert len(cpu["provider"]["worker_ips"]) == len(npu["provider"]["worker_ips"])
    for key in npu.keys() - MACHINES:
        if key == "file_mounts":
            assert {k: v for k, v in cpu[key].items() if k != "~/evokernel-wheels"} == npu[key]
        elif key.endswith("_commands"):
            assert _without_cann(npu[key]) == _without_cann(cpu[key]), key
        else:
            assert cpu[key] == npu[key], key


def _http_status(url: str, token: str | None = None) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:  # not listening (yet)
        return 0


def _start_node(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    # --block keeps every Ray process of this node in one process group that we can stop
    # by itself; `ray stop` would stop every Ray instance on this machine.
    with log.open("w") as out:
        return subprocess.Popen([RAY, "start", *args, "--block"], env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _wait_for(predicate, nodes: dict[Path, subprocess.Popen], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for log, node in nodes.items():
            if node.poll() is not None:
                raise AssertionError(f"`ray start` exited with {node.returncode}:\n{log.read_text()[-3000:]}")
        if predicate():
            return
        time.sleep(1.0)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_start_commands_bring_up_an_authenticated_two_node_cluster(tmp_path):
    """cluster.yaml's own `ray start` lines and node environment, run here as head plus one worker."""
    config = _load(REPO / "cluster.yaml")
    node_env = _node_environment(config, tmp_path)
    token_file = Path(node_env["RAY_AUTH_TOKEN_PATH"])  # where file_mounts puts the token
    token_file.parent.mkdir(parents=True)
    token_file.write_text(secrets.token_hex(32))
    env = {**os.environ, "RAY_AUTH_MODE": node_env["RAY_AUTH_MODE"], "RAY_AUTH_TOKEN_PATH": str(token_file)}
    env.pop("RAY_AUTH_TOKEN", None)
    gcs_port, dashboard_port = free_port(), free_port()
    # (the address the launcher reached a node at: loopback here, given below)
    head_start = _ray_start_args(_the_ray_start(config["head_start_ray_commands"]))
    worker_start = _ray_start_args(_the_ray_start(config["worker_start_ray_commands"]))
    head_args = [a.replace("6379", str(gcs_port)) for a in head_start
                 if not a.startswith(("--autoscaling-config", "--node-ip-address"))]
    worker_args = [a.replace("$RAY_HEAD_IP", "127.0.0.1").replace("6379", str(gcs_port))
                   for a in worker_start if not a.startswith("--node-ip-address")]
    # Ray's socket paths must stay under 108 bytes: a short temp dir, not pytest's.
    ray_tmp = tempfile.mkdtemp(prefix="evk-ray-")
    local = ["--node-ip-address=127.0.0.1", "--num-cpus=1", f"--temp-dir={ray_tmp}"]
    nodes: dict[Path, subprocess.Popen] = {}
    try:
        head_log, worker_log = tmp_path / "head.log", tmp_path / "worker.log"
        nodes[head_log] = _start_node([*head_args, *local, f"--dashboard-port={dashboard_port}"], env, head_log)
        _wait_for(lambda: _http_status(f"http://127.0.0.1:{dashboard_port}/api/version") == 401, nodes, 90,
                  "the dashboard")
        nodes[worker_log] = _start_node([*worker_args, *local, f"--dashboard-agent-listen-port={free_port()}"],
                                        env, worker_log)

        def status(extra_env: dict[str, str]) -> subprocess.CompletedProcess:
            return subprocess.run([RAY, "status", f"--address=127.0.0.1:{gcs_port}"], env={**env, **extra_env},
                                  capture_output=True, text=True, timeout=120)

        _wait_for(lambda: "16.0 NPU" in status({}).stdout, nodes, 90, "both nodes with 8 NPUs each")
        refused = status({"RAY_AUTH_TOKEN": "not-the-cluster-token"})
        assert refused.returncode != 0 and "InvalidAuthToken" in refused.stdout + refused.stderr
        # The dashboard asks for the token, and listens on loopback only.
        assert _http_status(f"http://127.0.0.1:{dashboard_port}/api/version", token_file.read_text()) == 200
        outward = socket.gethostbyname(socket.gethostname())
        if not outward.startswith("127."):
            with pytest.raises(OSError), socket.create_connection((outward, dashboard_port), timeout=5):
                pass
    finally:
        for node in reversed(nodes.values()):
            if node.poll() is None:
                os.killpg(node.pid, signal.SIGTERM)
                node.wait(timeout=60)
        shutil.rmtree(ray_tmp, ignore_errors=True)



WATCH_SCRIPT = r"""
mkdir -p /tmp/ray && mount -t tmpfs evk-watch /tmp/ray || exit 3
mkdir -p /tmp/ray/session_t/logs && ln -s /tmp/ray/session_t /tmp/ray/session_latest
session() { bash -c 'sleep 1000; :' "/tmp/ray/session_t/logs/$1" & echo $! > "$OUT/$1"; }
state() { kill -0 "$(cat "$OUT/$1")" 2>/dev/null && echo "$2: alive" || echo "$2: gone"; }
start() { bash -c "$STOP"; bash -c "$WATCH"; sleep 0.1; raylet 1000 & session "$1"; }  # `ray start` last
# A watcher looks every 2 s from its start (RAY_SESSION_WATCH_POLL_S): at 0 (no raylet yet), 2, 4, 6 ...
start monitor_1; sleep 4.9
# t = 5, between two looks: started again by the launcher (the same session folder), this `ray stop`
# ends the first raylet; had the first watcher survived, its look at 6 would end the new session
start monitor_2; sleep 3; state monitor_2 restart >> "$OUT/states"
pkill -x raylet; sleep 3; state monitor_2 down >> "$OUT/states"  # `ray down`: the head gone, the raylet ends
# a start cut short before any raylet came up: what it left goes once the watcher stops waiting
bash -c "$STOP"; sh "$HOME/evokernel/scripts/ray_session_watch.sh" 2 & session monitor_3; sleep 4
state monitor_3 "cut short" >> "$OUT/states"
"""


def test_a_worker_s_watcher_ends_its_session_after_ray_down_and_spares_a_restarted_one(tmp_path):
    """The local files' worker start commands and scripts/ray_session_watch.sh, run in a PID and
    mount namespace of their own where `raylet` is a stand-in process of that name and `ray stop`
    ends it (as Ray's does): after a restart in the same session the new session's processes stay
    (the old watcher is gone); once the raylet ends, or a start never brought one up, the watcher
    ends the rest of the session."""
    commands = _load(CPU_FILE)["worker_start_ray_commands"]
    stop, watch = commands[0], commands[1]
    assert "ray stop" in stop and "ray_session_watch" in watch and "ray start" in commands[2]
    bin_dir, home, out = tmp_path / "bin", tmp_path / "home", tmp_path / "out"
    for folder in (bin_dir, home / ".evokernel", out):
        folder.mkdir(parents=True)
    (home / "evokernel").symlink_to(REPO)  # file_mounts puts the project there
    shutil.copy(shutil.which("sleep"), bin_dir / "raylet")  # pgrep -x raylet matches by this name
    (bin_dir / "ray").write_text('#!/bin/sh\n[ "$1" = stop ] && pkill -x raylet; exit 0\n')
    (bin_dir / "ray").chmod(0o755)
    (home / ".evokernel" / "env.sh").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    env = {**os.environ, "HOME": str(home), "PATH": f"{bin_dir}:{os.environ['PATH']}", "OUT": str(out),
           "STOP": stop, "WATCH": watch, "RAY_SESSION_WATCH_POLL_S": "2"}
    try:
        run = subprocess.run(["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--mount-proc",
                              "bash", "-c", WATCH_SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        pytest.skip("unshare is not installed")
    if run.returncode == 3 or (run.returncode != 0 and "unshare" in run.stderr):
        pytest.skip(f"no PID and mount namespace here: {run.stderr.strip()}")
    assert run.returncode == 0, run.stderr
    assert (out / "states").read_text().splitlines() == ["restart: alive", "down: gone", "cut short: gone"]
