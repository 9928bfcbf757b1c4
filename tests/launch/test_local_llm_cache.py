"""The real server keeps two operators' prompts warm (issue 42): with the prompt cache on, a
draft whose previous request was another operator's reads only what follows its own earlier
prompt; with it off, everything after the shared static part. Token counts, not seconds: the
server's own log says how many prompt tokens it read anew.

Slow (model load, six prompts of ~500 tokens on the CPU) and only where the `local-llm`
extra is installed and the model has been fetched; skipped otherwise.
"""

from __future__ import annotations

import importlib.util

import openai
import pytest

from bench.attempt import log_size, prompt_tokens_evaluated
from launch.config import load_settings
from launch.local_llm.fetch import is_verified
from launch.local_llm.models import QWEN25_CODER_15B
from launch.local_llm.server import prepare_server

pytestmark = pytest.mark.slow

STATIC = ("You write ONE C function, `kernel`. Reply with one ```cpp code block.\n"
          + "".join(f"- rule {i}: plain loops over raw pointers, no intrinsics, no threads.\n" for i in range(15)))


def task(name: str, attempt: int) -> list[dict[str, str]]:
    reference = "".join(f"    # step {i} of {name}: y = f(x) elementwise\n" for i in range(15))
    return [{"role": "system", "content": STATIC},
            {"role": "user", "content": f"## Task {name}\n{reference}\nAttempt {attempt}: write it."}]


@pytest.fixture(scope="module")
def model_ready():
    settings = load_settings()
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("the local-llm extra is not installed")
    if not is_verified(settings.local_llm.cache_path() / QWEN25_CODER_15B.file_name, QWEN25_CODER_15B):
        pytest.skip("the local model is not fetched (evokernel llm fetch)")
    return settings


def new_tokens_of_alternating_operators(settings, cache_mb: int) -> tuple[int, int]:
    """Operator A, then B, then A again (the order two operators in flight make); returns A's
    second prompt's tokens and how many of them the server read anew."""
    config = settings.local_llm.model_copy(update={"prompt_cache_mb": cache_mb})
    server = prepare_server(config, harness_beside=False)
    try:
        url = server.start()
        client = openai.OpenAI(base_url=url, api_key="local", timeout=600)
        for messages in (task("GELU", 1), task("Softmax", 1)):
            client.chat.completions.create(model=QWEN25_CODER_15B.name, messages=messages, max_tokens=4, temperature=0)
        since = log_size(server)
        prompt = client.chat.completions.create(model=QWEN25_CODER_15B.name, messages=task("GELU", 2), max_tokens=4,
                                                temperature=0).usage.prompt_tokens
        return prompt, prompt_tokens_evaluated(server, since, prompt)
    finally:
        server.close()


def test_the_prompt_cache_keeps_two_operators_warm(model_ready):
    prompt, read_with_cache = new_tokens_of_alternating_operators(model_ready, 256)
    _, read_without = new_tokens_of_alternating_operators(model_ready, 0)
    # GELU's second prompt after Softmax's first: with the cache only "2: write it." and the end
    # of the turn are new; without it, GELU's whole reference is read again.
    assert read_with_cache < 0.1 * prompt
    assert read_without > 0.3 * prompt
