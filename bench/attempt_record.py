"""Record the learning benchmark's own prompts for `bench/attempt.py` to replay.

The attempts.jsonl files of runs/learning keep token counts, not prompts, so the prompts are
reproduced: `python -m bench.attempt_record` runs the learning benchmark (`bench.learning`,
quick size by default, one arm) against the local model with a recording proxy in front of
its server. Every chat request the agent sends passes through the proxy unchanged; the proxy
appends one JSON line per request (messages, max_tokens, temperature, the task named in the
last user turn, the reply and its usage) to the output file.

    python -m bench.attempt_record --out bench/results/attempt_prompts.jsonl \
        [--tasks 4_ReLU,5_GELU,level2/1_GemmBiasReLU] [--iterations 3] [--arm similarity]

`--draft-set` records requests instead of prompts (`draft_set`): the fixed replay set of
issue 42, DraftRequests that any checkout's PromptBuilder turns into its own prompts, so
prompt layouts can be compared on the same content. Two operators per kernel language (C on
the cpu backend, Ascend C on the npu-twin), each drafted cold and then with memory content
from the v3 learning benchmark (runs/learning-v3-*): feasible kernels of related operators
(the first as the worked example, as `exemplar_as_example` shows it) and the failure its own
benchmark draft met.

    python -m bench.attempt_record --draft-set --out bench/results/attempt-2026-11-28/requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

TASK_HEADING = re.compile(r"^## Task (\S+)", re.MULTILINE)


def task_of(messages: list[dict[str, str]]) -> str | None:
    """The task the request is about: the `## Task X` heading of the last user turn (earlier
    user turns are the worked example's task)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            found = TASK_HEADING.search(message.get("content") or "")
            return found.group(1) if found else None
    return None


class RecordingProxy:
    """A loopback HTTP proxy to `upstream` (an OpenAI base URL) that records chat requests."""

    def __init__(self, upstream: str, out: Path):
        self.upstream, self.out, self.lock = upstream.rstrip("/"), out, threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                return

            def _forward(self, body: bytes | None) -> None:
                path = self.path[len("/v1"):] if self.path.startswith("/v1") else self.path
                request = urllib.request.Request(proxy.upstream + path, data=body, method=self.command,
                                                 headers={"Content-Type": "application/json"})
                started = time.perf_counter()
                try:
                    with urllib.request.urlopen(request, timeout=3600) as response:
                        status, payload = response.status, response.read()
                except urllib.error.HTTPError as exc:
                    status, payload = exc.code, exc.read()
                if body and path.endswith("/chat/completions") and status == 200:
                    proxy.record(json.loads(body), json.loads(payload), time.perf_counter() - started)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def record(self, request: dict, response: dict, wall_s: float) -> None:
        choice = (response.get("choices") or [{}])[0]
        row = {"task": task_of(request.get("messages") or []), "messages": request.get("messages"),
               "max_tokens": request.get("max_tokens"), "temperature": request.get("temperature"),
               "reply": (choice.get("message") or {}).get("content"), "finish_reason": choice.get("finish_reason"),
               "usage": response.get("usage"), "wall_s": round(wall_s, 2),
               "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        with self.lock, self.out.open("a") as handle:
            handle.write(json.dumps(row) + "\n")
        print(f"[record] {row['task']}: {(row['usage'] or {}).get('prompt_tokens')} prompt, "
              f"{(row['usage'] or {}).get('completion_tokens')} completion tokens, {wall_s:.0f} s", file=sys.stderr)

    @contextmanager
    def serving(self) -> Iterator[str]:
        thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self.base_url
        finally:
            self.server.shutdown()
            self.server.server_close()


# (backend, operator, memory traces: [exemplar, context item], the failures its benchmark drafts
# met, shown to rounds 2 and 3)
DRAFT_SET = [
    ("cpu", "5_GELU", ["7_Sigmoid", "4_ReLU"], ["correctness", "compile"]),
    ("cpu", "16_MaxOverDim", ["15_MeanOverDim", "56_SumOverLastDim"], ["correctness", "runtime"]),
    ("npu-twin", "11_Softplus", ["7_Sigmoid", "10_HardSwish"], ["compile", "no_code"]),
    ("npu-twin", "18_Softmax", ["19_LogSoftmax", "7_Sigmoid"], ["compile", "no_code"]),
]


def _benchmark_kernel(runs: Path, backend: str, task: str) -> str:
    run = runs / f"learning-v3-{backend}"
    found = sorted(run.glob(f"arms/*/kernels/{task}/best.cpp"))
    if not found:
        raise SystemExit(f"no feasible {task} kernel under {run}")
    return found[0].read_text()


def _benchmark_failure(runs: Path, backend: str, task: str, gate: str) -> tuple[str, str]:
    for path in sorted((runs / f"learning-v3-{backend}").glob("arms/*/attempts.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if row["task"] == task and row["stage"] == "draft" and row["gate"] == gate:
                return row["gate"], row["reason"]
    raise SystemExit(f"no {gate} failure of {task} in {runs}")


def draft_set(runs: Path) -> list[dict]:
    """The replay set's rows: operator, backend, round (1 cold; 2 and 3 with the same memory and
    the failure of the draft before), the DraftRequest."""
    from actors.briefing import task_brief
    from actors.messages import ContextItem, DraftRequest, Exemplar, Feedback
    from memory_actor.seeding import bundle_items
    from npu_pool.backends import get_backend
    from npu_pool.config import HarnessConfig
    from npu_pool.sandbox.task_loader import load_task_for

    suite = REPOSITORY / "suites" / "cpu" / "level1"
    rows = []
    for backend, task, traces, gates in DRAFT_SET:
        def brief(name: str, backend: str = backend):
            # loaded as a campaign loads it: fitted sizes, in the bounded loader child
            return task_brief(load_task_for(suite / f"{name}.py", HarnessConfig()), get_backend(backend), "kernel")

        core = [ContextItem(id=i.id, kind=i.kind, summary=i.summary, content=i.content, core=True)
                for i in bundle_items(backend) if "core" in i.tags]
        cold = DraftRequest(task=brief(task), api=core)
        kernels = {name: _benchmark_kernel(runs, backend, name) for name in traces}
        example, other = traces
        memory = cold.model_copy(update={
            "exemplar": Exemplar(item_id=f"v3-{backend}-{example}", task=brief(example), code=kernels[example]),
            "context": [ContextItem(id=f"v3-{backend}-{other}", kind="trace", task=other, content=kernels[other],
                                    summary=f"a correct kernel of {other} [feasible]")]})
        warm = [memory.model_copy(update={"previous": Feedback(gate=g, reason=r)})
                for g, r in (_benchmark_failure(runs, backend, task, gate) for gate in gates)]
        for round_, request in enumerate([cold, *warm], start=1):
            rows.append({"operator": task, "backend": backend, "round": round_, "memory": round_ > 1,
                         "request": request.model_dump(mode="json")})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench/results/attempt_prompts.jsonl", help="JSON lines, appended")
    parser.add_argument("--tasks", default="4_ReLU,5_GELU,level2/1_GemmBiasReLU", help="bench.learning --tasks")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--arm", default="similarity", help="one arm of bench.learning")
    parser.add_argument("--draft-set", action="store_true", help="write the fixed set of DraftRequests (no model)")
    parser.add_argument("--runs", default=str(REPOSITORY / "runs"), help="where the v3 learning benchmark's runs are")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.draft_set:
        out.write_text("".join(json.dumps(row) + "\n" for row in draft_set(Path(args.runs))))
        return 0

    import launch.local_llm.server as local_server
    from bench.learning import cli as learning

    serve = local_server.local_llm_server

    @contextmanager
    def recorded_server(settings) -> Iterator[str]:
        with serve(settings) as base_url:
            with RecordingProxy(base_url, out).serving() as proxied:
                yield proxied

    local_server.local_llm_server = recorded_server  # bench.learning imports it when it serves the model
    with tempfile.TemporaryDirectory(prefix="evokernel-attempt-record-") as work:
        return learning.main(["learn", "--tasks", args.tasks, "--iterations", str(args.iterations),
                              "--arms", args.arm, "--out", work])


if __name__ == "__main__":
    sys.exit(main())
