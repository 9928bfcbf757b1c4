"""A stand-in for `python -m llama_cpp.server`, used by the local LLM tests.

A real HTTP server in a real process, started through the same command line; it answers
the OpenAI API with a fixed reply (and records each request, and takes STANDIN_DELAY_S
seconds over each), or never becomes ready, or exits early, or dies on its first token, or is
killed by a chat request (every one, or the first of the test), as the environment variable
STANDIN_MODE says.
"""

from __future__ import annotations

import json
import textwrap
import urllib.request
from pathlib import Path

import pytest
import structlog

STANDIN_MODULE = "evokernel_standin_llm_server"
FIXED_REPLY = "```c\nvoid kernel(const float* x, float* out, long n) { for (long i = 0; i < n; ++i) out[i] = x[i]; }\n```"

STANDIN_SOURCE = textwrap.dedent('''
    """Stand-in for `python -m llama_cpp.server`: same flags, OpenAI API, scripted behaviour."""
    import argparse, json, os, signal, sys, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    parser = argparse.ArgumentParser()
    for flag in ("--model", "--model_alias", "--host", "--port", "--n_threads", "--n_threads_batch", "--n_ctx", "--chat_format",
                 "--logits_all", "--cache", "--cache_type", "--cache_size", "--draft_model", "--draft_model_num_pred_tokens", "--seed"):
        parser.add_argument(flag)
    args = parser.parse_args()
    mode = os.environ.get("STANDIN_MODE", "ready")
    if os.environ.get("STANDIN_ARGV_FILE"):
        with open(os.environ["STANDIN_ARGV_FILE"], "w") as handle:
            json.dump(vars(args), handle)
    print("stand-in: loading " + args.model, file=sys.stderr, flush=True)
    if mode == "exit":
        print("stand-in: error: cannot load model", file=sys.stderr, flush=True)
        sys.exit(3)
    if mode == "never":
        time.sleep(3600)

    def die(signum):
        os.kill(os.getpid(), signum)
        time.sleep(60)  # the signal is delivered asynchronously: answer nothing meanwhile

    class Handler(BaseHTTPRequestHandler):
        def _send(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/v1/models":
                self._send({"object": "list", "data": [{"id": args.model_alias, "object": "model", "owned_by": "me"}]})
            else:
                self.send_error(404)

        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/v1/completions":  # the start's one-token check, not a request of the run's
                if mode == "segfault":  # as llama.cpp's AMX path did on the first forward pass
                    die(signal.SIGSEGV)
                self._send({"id": "cmpl-0", "object": "text_completion", "created": 0, "model": request["model"],
                            "choices": [{"index": 0, "text": "1", "finish_reason": "length"}]})
                return
            died = os.environ["STANDIN_REQUESTS_FILE"] + ".died"
            if mode == "dies" or (mode == "dies_once" and not os.path.exists(died)):  # as the OOM killer would
                open(died, "a").close()
                die(signal.SIGKILL)
            with open(os.environ["STANDIN_REQUESTS_FILE"], "a") as handle:
                handle.write(json.dumps(request) + "\\n")
            time.sleep(float(os.environ.get("STANDIN_DELAY_S", "0")))  # busy with the request
            self._send({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": request["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": os.environ["STANDIN_REPLY"]}}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
            })

        def log_message(self, *args):
            pass

    ThreadingHTTPServer((args.host, int(args.port)), Handler).serve_forever()
''')



def install_standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make the stand-in the configured server (for this process and its children), with a dummy model file."""
    folder = tmp_path / "standin"
    folder.mkdir()
    (folder / f"{STANDIN_MODULE}.py").write_text(STANDIN_SOURCE)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", str(folder))
    monkeypatch.setenv("STANDIN_REPLY", FIXED_REPLY)
    monkeypatch.setenv("STANDIN_ARGV_FILE", str(tmp_path / "argv.json"))
    monkeypatch.setenv("STANDIN_REQUESTS_FILE", str(tmp_path / "requests.jsonl"))
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setenv("EVOKERNEL_LOCAL_LLM__SERVER_MODULE", STANDIN_MODULE)
    monkeypatch.setenv("EVOKERNEL_LOCAL_LLM__MODEL_PATH", str(model))
    return tmp_path


def reset_structlog():
    """Autouse fixture body: `main()` binds structlog to the stderr pytest captured for one test."""
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


def port_is_closed(base_url: str) -> bool:
    try:
        urllib.request.urlopen(f"{base_url}/models", timeout=2)
    except OSError:
        return True
    return False


def recorded_requests(folder: Path) -> list[dict]:
    path = folder / "requests.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
