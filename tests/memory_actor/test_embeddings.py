"""Embeddings: the offline MiniLM (cached by content) and an OpenAI-compatible endpoint, here a
real HTTP server on loopback with scripted vectors."""

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from memory_actor.bank import MemoryBank
from memory_actor.items import MemoryItem
from memory_actor.messages import RetrievalRequest

DIM = 16


def _scripted_vector(text: str) -> list[float]:
    """Texts sharing their first word get nearly the same vector."""
    head = np.frombuffer(hashlib.sha256(text.split()[0].encode()).digest()[:DIM], dtype=np.uint8)
    tail = np.frombuffer(hashlib.sha256(text.encode()).digest()[:DIM], dtype=np.uint8)
    return (head.astype(float) + 0.05 * tail.astype(float)).tolist()


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    requests: list = []

    def do_POST(self):  # http.server's method naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        reply = {"object": "list", "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1},
                 "data": [{"object": "embedding", "index": i, "embedding": _scripted_vector(t)}
                          for i, t in reversed(list(enumerate(texts)))]}  # out of order on purpose
        payload = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def embeddings_server():
    _EmbeddingsHandler.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", _EmbeddingsHandler.requests
    server.shutdown()


def test_openai_endpoint_embeds_in_batches_and_keeps_the_key_out(memory_config, embeddings_server, monkeypatch):
    base_url, requests = embeddings_server
    monkeypatch.setenv("TEST_EMBED_KEY", "sk-test-embedding-key-123456")
    config = memory_config(embedder="openai", embed_base_url=base_url, embed_model="scripted-embed",
                           embed_api_key_env="TEST_EMBED_KEY", embed_batch_size=2, retrieval="similarity")
    bank = MemoryBank(config)
    assert bank.dim == DIM and bank.identity == "openai:scripted-embed"
    bank.add([MemoryItem(kind="practice", backend="cpu", content=f"{word} advice {i}")
              for i, word in enumerate(["tiling", "vectorise", "fusion"])])
    found = bank.retrieve(RetrievalRequest(query="vectorise the loop", stage="draft", backend="cpu",
                                           kinds=["practice"], n=1))
    assert found.items[0].content == "vectorise advice 1"
    batches = [r for r in requests if r["path"] == "/v1/embeddings"]
    assert max(len(r["body"]["input"]) for r in batches) == 2  # embed_batch_size
    assert all(r["auth"] == "Bearer sk-test-embedding-key-123456" for r in batches)
    stored = json.dumps(bank.store.read_meta()) + str(bank.items_table().to_pylist())
    assert "sk-test" not in stored
    assert MemoryBank(config).dim == DIM  # reopening learns nothing new


def test_minilm_cache_and_similarity(minilm):
    vectors = minilm.embed(["tile the loops for the L1 cache", "block the loops to fit in cache",
                            "the weather is sunny", "tile the loops for the L1 cache"])
    assert vectors.shape == (4, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    np.testing.assert_array_equal(vectors[0], vectors[3])
    assert len(minilm._cache) >= 3
