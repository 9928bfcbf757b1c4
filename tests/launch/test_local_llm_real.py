"""The real thing: llama-cpp-python's server with the fetched model, one kernel-format answer.

Slow (model load plus ~30-60 s of CPU generation) and only where the `local-llm` extra is
installed and the model has been fetched (`evokernel llm fetch`); skipped otherwise.
"""

from __future__ import annotations

import importlib.util

import openai
import pytest

from launch.config import load_settings
from launch.local_llm.fetch import is_verified
from launch.local_llm.models import QWEN25_CODER_15B
from launch.local_llm.server import local_llm_server

pytestmark = pytest.mark.slow

SYSTEM = (
    "You write ONE C++ function, `kernel`, with exactly the signature you are given. "
    "Reply with ONE ```cpp code block and nothing else."
)
USER = (
    "Compute ReLU elementwise: out[i] = max(x[i], 0) for i in [0, n).\n"
    "Signature:\n```cpp\nextern \"C\" void kernel(const float* x, float* out, long n);\n```"
)


def test_real_server_answers_a_kernel_prompt():
    settings = load_settings()
    model_path = settings.local_llm.cache_path() / QWEN25_CODER_15B.file_name
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("the local-llm extra is not installed")
    if not is_verified(model_path, QWEN25_CODER_15B):
        pytest.skip("the local model is not fetched (evokernel llm fetch)")
    with local_llm_server(settings) as base_url:
        client = openai.OpenAI(base_url=base_url, api_key="local", timeout=QWEN25_CODER_15B.request_timeout_s)
        reply = client.chat.completions.create(
            model=QWEN25_CODER_15B.name,
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}],
            temperature=0.0,
            max_tokens=200,
        )
    text = reply.choices[0].message.content
    assert "void kernel(" in text and reply.usage.completion_tokens > 0
