"""One local LLM server process on loopback: start it, wait until it answers, always stop it.

The server runs as `python -m MODULE ARGS` behind a tiny launcher that watches its parent:
if evokernel dies without cleaning up (SIGKILL, a crash), the server stops itself instead
of holding a gigabyte of memory and every core. Its output goes to an unlinked temporary
file (a pipe nobody reads would stall it); errors quote its last lines.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import structlog

log = structlog.get_logger("evokernel.llm.server")

LOOPBACK = "127.0.0.1"
OUTPUT_TAIL_LINES = 25
OUTPUT_TAIL_BYTES = 64 << 10

# argv: parent pid, module, module args. Checks once a second that the parent still lives; once
# it is gone, SIGTERM, and SIGKILL 5 s later (an orphan kept generating an answer nobody read).
_LAUNCHER = """
import os, runpy, signal, sys, threading, time
parent = int(sys.argv[1])
def watch_parent():
    while os.getppid() == parent:
        time.sleep(1)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)  # uvicorn lets a request in progress finish first: minutes of CPU generation
    os.kill(os.getpid(), signal.SIGKILL)
threading.Thread(target=watch_parent, daemon=True).start()
sys.argv = sys.argv[2:]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


class LocalLLMError(RuntimeError):
    """The local model could not be prepared or served; the message says what to do."""


def threads_of_running_servers(module: str, proc: Path = Path("/proc")) -> list[int]:
    """The llama.cpp threads of every process on this machine that serves `module` (its
    `--n_threads`; llama-cpp-python's own default, half the cores, when not given): another run's
    model server. Two servers that each take every core stall each other (llama.cpp's threads wait
    for each other after every operation): two benchmarks side by side on 2 cores drafted 5-10x
    slower than with one thread each. Empty where /proc cannot be read."""
    found: list[int] = []
    try:
        entries = [e for e in proc.iterdir() if e.name.isdigit() and int(e.name) != os.getpid()]
    except OSError:
        return found
    for entry in entries:
        try:
            words = [w.decode(errors="replace") for w in (entry / "cmdline").read_bytes().split(b"\0")]
        except OSError:
            continue  # ended meanwhile, or not ours to read
        if module not in words:
            continue
        given = words[words.index("--n_threads") + 1] if "--n_threads" in words[:-1] else ""
        found.append(int(given) if given.isdigit() else max(1, (os.cpu_count() or 2) // 2))
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


# A server that loads its model and then dies on its first token (llama.cpp's AMX path on Intel Sapphire
# Rapids did) would otherwise surface minutes later as "cannot reach the LLM endpoint" on every operator.
CRASH_HINT = ("where the processor has AMX (Intel Sapphire Rapids or later), rebuild llama.cpp without it: "
              "`bash scripts/setup.sh local-llm` does")
FIRST_TOKEN_PROMPT = "def add(a, b):\n    return"
# A server that dies during a run (the kernel's OOM killer, a crash on some prompt) is started again on
# its port, so the run's requests, retrying, find it back; a server that keeps dying is left dead (the
# run then waits llm.endpoint_wait_s and stops its operators as infrastructure faults, resumable).
MAX_RESTARTS = 3


def ended_how(code: int) -> str:
    if code < 0 and -code in signal.valid_signals():
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


class LocalLLMServer:
    """`start()` returns the base URL once `/v1/models` answers and the model has written one token;
    `close()` always cleans up."""

    def __init__(self, module: str, args: list[str], port: int, startup_timeout_s: float, model: str = ""):
        self.module = module
        self.args = args
        self.model = model  # the name it serves the model under (its --model_alias)
        self.port = port
        self.base_url = f"http://{LOOPBACK}:{port}/v1"
        self.startup_timeout_s = startup_timeout_s
        self.process: subprocess.Popen | None = None
        # Unlinked at once (nothing is left behind even if evokernel is killed), opened for
        # appending so the server's writes never depend on where we read.
        self._log = tempfile.TemporaryFile(mode="a+b", prefix="evokernel-llm-", suffix=".log")
        self._closing = False
        self.starts = self.restarts = 0  # starts that became ready; restarts the keeper tried

    def start(self, check_port: bool = True) -> str:
        # Another process answering on this port would pass the readiness check for us.
        if check_port and not port_is_free(self.port):
            raise LocalLLMError(f"port {self.port} on {LOOPBACK} is in use; choose another (local_llm.port)")
        log.info("llm.server.starting", url=self.base_url, command=f"python -m {self.module} {' '.join(self.args)}")
        started = time.monotonic()
        command = [sys.executable, "-c", _LAUNCHER, str(os.getpid()), self.module, *self.args]
        # A group of its own: a terminal's Ctrl-C (sent to the foreground group) is evokernel's to act on;
        # the server stops after the run's end, or by itself when evokernel is gone (the launcher).
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
                                        process_group=0)
        while True:
            code = self.process.poll()
            if code is not None:
                self.process = None
                raise LocalLLMError(f"the local LLM server {ended_how(code)} before it answered:\n{self.output_tail()}")
            if self._answers():
                self._write_first_token(self.startup_timeout_s - (time.monotonic() - started))
                self.starts += 1
                log.info("llm.server.ready", url=self.base_url, startup_s=round(time.monotonic() - started, 1))
                return self.base_url
            if time.monotonic() - started > self.startup_timeout_s:
                self.stop()
                raise LocalLLMError(
                    f"the local LLM server did not answer on {self.base_url}/models within "
                    f"{self.startup_timeout_s:.0f} s (local_llm.startup_timeout_s):\n{self.output_tail()}"
                )
            time.sleep(0.25)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return False

    def _write_first_token(self, timeout_s: float) -> None:
        """One token through /completions: the model's whole forward pass, which /models never runs, on a
        prompt of several tokens (a batch: llama.cpp's AMX matmul crashed on 2 tokens and passed on 1).
        A server without that endpoint (an HTTP error) is taken as ready; one that dies is not."""
        assert self.process is not None
        body = json.dumps({"model": self.model, "prompt": FIRST_TOKEN_PROMPT, "max_tokens": 1, "temperature": 0}).encode()
        request = urllib.request.Request(f"{self.base_url}/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=max(timeout_s, 30.0)):
                return
        except urllib.error.HTTPError as error:
            log.info("llm.server.no_first_token_check", status=error.code)
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as error:
            failure = error
        try:
            code = self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.stop()
            raise LocalLLMError(f"the local LLM server answered but wrote no token ({failure}):\n{self.output_tail()}") from None
        self.process = None
        raise LocalLLMError(f"the local LLM server {ended_how(code)} on its first token ({CRASH_HINT}):\n{self.output_tail()}")

    def keep_alive(self) -> None:
        """Watch the started server from a thread; if it dies before close(), start it again on its
        port, at most MAX_RESTARTS times, saying so in the log with how it ended and its last lines."""
        threading.Thread(target=self._keep, name="evokernel-llm-keeper", daemon=True).start()

    def _keep(self) -> None:
        while True:
            if (process := self.process) is not None:
                code = process.wait()
                if self._closing or process is not self.process:
                    return  # closed, or stopped by its owner
                log.error("llm.server.died", url=self.base_url, how=ended_how(code), output=self.output_tail(8))
            if self.restarts >= MAX_RESTARTS:
                log.error("llm.server.not_restarted", restarts=self.restarts,
                          hint="it keeps dying: the run waits llm.endpoint_wait_s, then stops its operators (resumable)")
                self.process = None
                return
            self.restarts += 1
            log.warning("llm.server.restarting", url=self.base_url, restart=self.restarts, of=MAX_RESTARTS)
            try:
                self.start(check_port=False)  # the port is ours; the dead server's connections may linger on it
            except LocalLLMError as error:
                if self._closing:
                    return
                log.error("llm.server.restart_failed", error=str(error).splitlines()[0])
                continue  # a request that kills it may have reached it before it was ready: try again
            if self._closing:  # closed while it started: nothing else would stop this one
                self.stop()
                return

    def wait(self) -> int:
        """Block until the server exits (it only does on its own when something went wrong)."""
        assert self.process is not None, "start() first"
        return self.process.wait()

    def stop(self, grace_s: float = 10.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        # SIGTERM, not SIGINT: a server started from a background shell job ignores SIGINT.
        process.terminate()
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.info("llm.server.stopped", url=self.base_url)

    def output_tail(self, lines: int = OUTPUT_TAIL_LINES) -> str:
        size = os.fstat(self._log.fileno()).st_size
        start = max(0, size - OUTPUT_TAIL_BYTES)
        text = os.pread(self._log.fileno(), size - start, start).decode(errors="replace")
        return "\n".join(text.splitlines()[-lines:]) or "(no output)"

    def close(self) -> None:
        self._closing = True  # the keeper lets it go
        try:
            self.stop()
        finally:
            self._log.close()
