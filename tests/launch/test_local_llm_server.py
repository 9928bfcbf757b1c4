"""The local server's lifecycle, against a stand-in for llama-cpp-python's server.

The stand-in is a real HTTP server in a real process, started through the same command
line (`python -m MODULE --model ... --port ...`); it answers the OpenAI API with a fixed
reply, or never becomes ready, exits early, or dies (on its first token, or on a request), as the
test asks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import openai
import pytest

from launch.config import load_settings
from launch.local_llm.config import LocalLLMConfig
from launch.local_llm.models import QWEN25_CODER_15B
from launch.local_llm.process import MAX_RESTARTS, LocalLLMError, threads_of_running_servers
from launch.local_llm.server import local_llm_server, local_llm_status, prepare_server
from tests.launch.local_llm_standin import (
    FIXED_REPLY,
    STANDIN_MODULE,
    install_standin,
    port_is_closed,
    reset_structlog,
)

fresh_logging = pytest.fixture(autouse=True)(reset_structlog)


@pytest.fixture
def standin(tmp_path, monkeypatch):
    return install_standin(tmp_path, monkeypatch)


def test_context_manager_serves_until_the_block_ends(standin):
    settings = load_settings(overrides={"local_llm": {"n_threads": 3}})
    with local_llm_server(settings) as base_url:
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        client = openai.OpenAI(base_url=base_url, api_key="local")
        assert [m.id for m in client.models.list()] == [QWEN25_CODER_15B.name]
        reply = client.chat.completions.create(
            model=QWEN25_CODER_15B.name, messages=[{"role": "user", "content": "write kernel"}]
        )
        assert reply.choices[0].message.content == FIXED_REPLY
    assert port_is_closed(base_url)
    argv = json.loads((standin / "argv.json").read_text())
    assert argv["host"] == "127.0.0.1" and argv["n_threads"] == "3" and argv["n_threads_batch"] == "3"
    assert argv["n_ctx"] == str(QWEN25_CODER_15B.n_ctx) and argv["chat_format"] == "chatml"
    assert argv["model"] == str(standin / "model.gguf")


def test_server_is_stopped_when_the_block_raises(standin):
    with pytest.raises(RuntimeError, match="boom"), local_llm_server(load_settings()) as base_url:
        raise RuntimeError("boom")
    assert port_is_closed(base_url)


def test_server_that_exits_early_is_reported_with_its_output(standin, monkeypatch):
    monkeypatch.setenv("STANDIN_MODE", "exit")
    with pytest.raises(LocalLLMError, match="exited with code 3") as error:
        with local_llm_server(load_settings()):
            pass
    assert "stand-in: error: cannot load model" in str(error.value)


def test_a_server_that_dies_on_its_first_token_is_reported_at_the_start(standin, monkeypatch):
    """llama.cpp built with AMX loaded the model, answered /models, and died by SIGSEGV on the first
    forward pass: the run then waited on "cannot reach the LLM endpoint" for every operator. The start
    now has the model write one token and names the crash, the hint and the server's last lines."""
    monkeypatch.setenv("STANDIN_MODE", "segfault")
    server = prepare_server(load_settings().local_llm)
    try:
        with pytest.raises(LocalLLMError, match="killed by SIGSEGV on its first token .*AMX") as error:
            server.start()
        assert "stand-in: loading" in str(error.value)
        assert server.process is None
    finally:
        server.close()


def _chat(base_url: str) -> str:
    client = openai.OpenAI(base_url=base_url, api_key="local", max_retries=0, timeout=10)
    reply = client.chat.completions.create(model=QWEN25_CODER_15B.name, messages=[{"role": "user", "content": "k"}])
    return reply.choices[0].message.content


def _wait_until(condition, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.1)
    return condition()


def test_a_server_killed_during_the_run_is_started_again_on_its_port(standin, monkeypatch):
    """The kernel's OOM killer (here: the stand-in's own SIGKILL on the first chat request) took the model
    server mid-run; the run's requests then failed until llm.endpoint_wait_s and stopped every operator.
    The server is now started again on the same port, so the client's retries find it."""
    monkeypatch.setenv("STANDIN_MODE", "dies_once")
    server = prepare_server(load_settings().local_llm)
    try:
        base_url = server.start()
        server.keep_alive()
        with pytest.raises(openai.APIConnectionError):
            _chat(base_url)
        assert _wait_until(lambda: server.starts == 2), "not started again"
        assert _chat(base_url) == FIXED_REPLY
    finally:
        server.close()
    assert port_is_closed(base_url) and server.process is None and server.restarts == 1


def test_a_server_that_keeps_dying_is_left_dead_after_its_restarts(standin, monkeypatch):
    monkeypatch.setenv("STANDIN_MODE", "dies")
    server = prepare_server(load_settings().local_llm)
    try:
        base_url = server.start()
        server.keep_alive()
        for restart in range(1, MAX_RESTARTS + 1):
            with pytest.raises(openai.APIConnectionError):
                _chat(base_url)
            assert _wait_until(lambda started=restart + 1: server.starts == started), restart
        with pytest.raises(openai.APIConnectionError):
            _chat(base_url)
        assert _wait_until(lambda: server.process is None), "the keeper did not give up"
        assert server.restarts == MAX_RESTARTS and port_is_closed(base_url)
    finally:
        server.close()


def test_server_that_never_answers_times_out_and_is_killed(standin, monkeypatch):
    monkeypatch.setenv("STANDIN_MODE", "never")
    server = prepare_server(load_settings(overrides={"local_llm": {"startup_timeout_s": 1.5}}).local_llm)
    try:
        with pytest.raises(LocalLLMError, match="did not answer .* within 2 s") as error:
            server.start()
        assert "stand-in: loading" in str(error.value)
        assert server.process is None  # stopped by start() itself
    finally:
        server.close()


def test_port_in_use_is_refused_rather_than_mistaken_for_ready(standin):
    with local_llm_server(load_settings()) as base_url:
        busy_port = int(base_url.rsplit(":", 1)[1].split("/")[0])
        with pytest.raises(LocalLLMError, match=f"port {busy_port} .* is in use"):
            with local_llm_server(load_settings(overrides={"local_llm": {"port": busy_port}})):
                pass


def test_server_stops_itself_when_evokernel_is_killed(standin):
    # A process that holds the server and is then SIGKILLed: no cleanup code runs in it.
    holder = subprocess.Popen(
        [sys.executable, "-c", (
            "from launch.config import load_settings\n"
            "from launch.local_llm.server import local_llm_server\n"
            "from launch.logging import configure_logging\n"
            "configure_logging(json_logs=True)\n"
            "import time\n"
            "with local_llm_server(load_settings()) as url:\n"
            "    print(url, flush=True)\n"
            "    time.sleep(600)\n"
        )],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        base_url = holder.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:"), base_url
        assert not port_is_closed(base_url)
        holder.kill()
        holder.wait()
        deadline = time.monotonic() + 15
        while not port_is_closed(base_url) and time.monotonic() < deadline:
            time.sleep(0.25)
        assert port_is_closed(base_url)
    finally:
        holder.kill()
        holder.wait()


def test_a_ctrl_c_at_the_terminal_reaches_evokernel_not_its_model_server(standin):
    """A terminal sends Ctrl-C to its whole foreground process group. The model server runs in a
    group of its own, so evokernel alone gets the stop and ends the server after the run's end
    (before, the server died with the keystroke and the operator in flight met a lost endpoint)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", (
            "import signal, time\n"
            "from launch.config import load_settings\n"
            "from launch.local_llm.server import local_llm_server\n"
            "from launch.logging import configure_logging\n"
            "configure_logging(json_logs=True)\n"
            "signal.signal(signal.SIGINT, lambda signum, frame: print('stop', flush=True))\n"
            "with local_llm_server(load_settings()) as url:\n"
            "    print(url, flush=True)\n"
            "    time.sleep(600)\n"
        )],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
    )
    try:
        base_url = holder.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:"), base_url
        os.killpg(holder.pid, signal.SIGINT)  # the terminal's Ctrl-C: the holder's whole group
        assert holder.stdout.readline().strip() == "stop"
        time.sleep(2)
        with urllib.request.urlopen(f"{base_url}/models", timeout=5) as response:
            assert response.status == 200  # the server did not get it
    finally:
        holder.kill()
        holder.wait()


def test_missing_server_package_says_how_to_install_it(tmp_path):
    config = LocalLLMConfig(server_module="no_such_llm_server_module", model_path=str(tmp_path))
    with pytest.raises(LocalLLMError, match="scripts/setup.sh local-llm"):
        prepare_server(config)


def test_cli_serve_runs_until_interrupted(standin):
    # Python leaves SIGINT ignored in a child whose parent ignored it: give the child the default.
    process = subprocess.Popen(
        [sys.executable, "-m", "launch.cli", "llm", "serve"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        line = process.stdout.readline()
        assert line.startswith(f"serving {QWEN25_CODER_15B.name} at http://127.0.0.1:"), process.stderr.read()
        base_url = line.split(" at ")[1].split()[0]
        with urllib.request.urlopen(f"{base_url}/models", timeout=5) as response:
            assert response.status == 200
        process.send_signal(signal.SIGINT)
        try:
            code = process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            pytest.fail(f"llm serve still ran 60 s after SIGINT; its stderr:\n{process.communicate()[1][-4000:]}")
        assert code == 130
        assert port_is_closed(base_url)
    finally:
        process.kill()
        process.wait()


def test_default_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert LocalLLMConfig().cache_path() == tmp_path / "evokernel" / "models"
    assert LocalLLMConfig(cache_dir="~/models").cache_path().is_absolute()


def test_status_line_for_doctor(tmp_path):
    missing = LocalLLMConfig(server_module="no_such_llm_server_module", cache_dir=str(tmp_path))
    assert local_llm_status(missing).startswith("server not installed (install it with `bash scripts/setup.sh local-llm`")
    assert "model not fetched (evokernel llm fetch, 1.1 GB)" in local_llm_status(missing)
    given = LocalLLMConfig(server_module="json", model_path="/models/mine.gguf", n_threads=3)
    assert local_llm_status(given) == "server json installed; model /models/mine.gguf (given)"


def test_speed_levers_reach_the_server_command_line(standin):
    """Issue 28's levers: logits of the last token only by default; the prompt cache on by
    default since issue 42 (two operators in flight), off at 0; prompt-lookup decoding when
    asked for (bench/attempt.py measures each)."""
    with local_llm_server(load_settings()):
        pass
    argv = json.loads((standin / "argv.json").read_text())
    assert argv["logits_all"] == "false" and argv["draft_model"] is None
    assert argv["cache"] == "true" and argv["cache_type"] == "ram" and argv["cache_size"] == str(256 << 20)
    with local_llm_server(load_settings(overrides={"local_llm": {"prompt_cache_mb": 0}})):
        pass
    assert json.loads((standin / "argv.json").read_text())["cache"] is None
    levers = {"logits_all": True, "prompt_cache_mb": 512, "prompt_lookup_tokens": 8}
    with local_llm_server(load_settings(overrides={"local_llm": levers})):
        pass
    argv = json.loads((standin / "argv.json").read_text())
    assert argv["logits_all"] == "true" and argv["cache"] == "true" and argv["cache_type"] == "ram"
    assert argv["cache_size"] == str(512 << 20)
    assert argv["draft_model"] == "prompt-lookup-decoding" and argv["draft_model_num_pred_tokens"] == "8"


def test_a_sampling_seed_reaches_the_server_only_when_set(standin):
    """The server's own seed by default (a fresh server's first reply is the same run after run);
    `local_llm.seed` gives another sequence of replies."""
    with local_llm_server(load_settings()):
        pass
    assert json.loads((standin / "argv.json").read_text())["seed"] is None
    with local_llm_server(load_settings(overrides={"local_llm": {"seed": 3}})):
        pass
    assert json.loads((standin / "argv.json").read_text())["seed"] == "3"


def test_a_busy_model_server_of_another_run_keeps_its_threads(standin, monkeypatch):
    """Another run's server (a real process whose command line serves the same module) holds 2
    of 4 cores: this one takes the 2 left instead of all 4, and says so; a set value still wins."""
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3})
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", STANDIN_MODULE,
                              "--n_threads", "2"])
    # until it has exec'd, /proc shows the forked copy of this test's own command line (CI lost
    # that race once): wait for its own
    cmdline = Path(f"/proc/{other.pid}/cmdline")
    deadline = time.monotonic() + 30
    while STANDIN_MODULE.encode() not in cmdline.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        with local_llm_server(load_settings(), one_operator_at_a_time=True):
            pass
        assert json.loads((standin / "argv.json").read_text())["n_threads"] == "2"
        with local_llm_server(load_settings(overrides={"local_llm": {"n_threads": 4}}), one_operator_at_a_time=True):
            pass
        assert json.loads((standin / "argv.json").read_text())["n_threads"] == "4"
    finally:
        other.kill()
        other.wait()
    with local_llm_server(load_settings(), one_operator_at_a_time=True):  # gone: every core again
        pass
    assert json.loads((standin / "argv.json").read_text())["n_threads"] == "4"


def test_other_servers_are_read_from_their_command_lines(tmp_path):
    proc = tmp_path / "proc"
    for pid, argv in {"11": ["python", "-c", "...", "7", "llama_cpp.server", "--n_threads", "3"],
                      "12": ["python", "-m", "llama_cpp.server", "--model", "m.gguf"],  # its own default
                      "13": ["python", "-m", "something.else", "--n_threads", "8"], "self": ["not a pid"]}.items():
        (proc / pid).mkdir(parents=True)
        (proc / pid / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (proc / "14").mkdir()  # a process that ended while the folder was read: no cmdline
    half = max(1, (os.cpu_count() or 2) // 2)
    assert sorted(threads_of_running_servers("llama_cpp.server", proc)) == sorted([3, half])
    assert threads_of_running_servers("llama_cpp.server", tmp_path / "absent") == []


def test_threads_follow_whether_the_harness_works_beside_the_model(standin, monkeypatch):
    """All cores when one operator runs at a time (the harness waits for the answer), all but
    one when kernels are evaluated while the model works; a set value always wins."""
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr("launch.local_llm.server.threads_of_running_servers", lambda module: [])  # no other run's
    runs = {
        "beside (Ray, 2 in flight)": (load_settings(), False, "3"),
        "one at a time (--no-ray)": (load_settings(), True, "4"),
        "one in flight (Ray)": (load_settings(overrides={"ray": {"max_in_flight": 1}}), False, "4"),
        "set by the user": (load_settings(overrides={"local_llm": {"n_threads": 2}}), True, "2"),
    }
    for case, (settings, sequential, expected) in runs.items():
        with local_llm_server(settings, one_operator_at_a_time=sequential):
            pass
        argv = json.loads((standin / "argv.json").read_text())
        assert (argv["n_threads"], argv["n_threads_batch"]) == (expected, expected), case
    # this project's machine (issue 42): one operator in flight, the default on 2 cores, gets both
    # cores, not 1 of 2; two in flight, when the user asks, keep one for the harness
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1})
    for settings, sequential, expected in ((load_settings(overrides={"ray": {"max_in_flight": 1}}), False, "2"),
                                           (load_settings(), True, "2"), (load_settings(), False, "2"),
                                           (load_settings(overrides={"ray": {"max_in_flight": 2}}), False, "1")):
        with local_llm_server(settings, one_operator_at_a_time=sequential):
            pass
        assert json.loads((standin / "argv.json").read_text())["n_threads"] == expected
