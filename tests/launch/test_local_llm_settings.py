"""How a run takes the local model's own settings (launch/local_llm/settings.py): wherever the user
set no value of their own, from the file, the environment or the command line."""

from __future__ import annotations

from actors.config import LLMConfig
from launch.config import load_settings
from launch.local_llm.models import QWEN25_CODER_15B
from launch.local_llm.settings import local_llm_config_for_agent, local_llm_settings


def test_agent_settings_take_the_model_settings_where_the_user_kept_defaults():
    user = LLMConfig(temperature=0.2)
    merged = local_llm_config_for_agent(user, QWEN25_CODER_15B, "http://127.0.0.1:1234/v1")
    assert merged.base_url == "http://127.0.0.1:1234/v1"
    assert merged.temperature == 0.2  # the user's choice wins
    assert merged.max_tokens == QWEN25_CODER_15B.max_tokens
    assert merged.candidate_format == "kernel"
    assert merged.max_concurrency == 1 and merged.model == QWEN25_CODER_15B.name
    assert merged.prompt_char_budget == QWEN25_CODER_15B.prompt_char_budget
    assert merged.small_model is True


def test_a_value_set_to_its_default_still_counts_as_set():
    url = "http://127.0.0.1:1234/v1"
    default_temperature = LLMConfig.model_fields["temperature"].default
    default_format = LLMConfig.model_fields["candidate_format"].default
    merged = local_llm_config_for_agent(LLMConfig(temperature=default_temperature, max_tokens=2048,
                                                  candidate_format=default_format, small_model=False),
                                        QWEN25_CODER_15B, url)
    assert (merged.temperature, merged.max_tokens) == (default_temperature, 2048)
    assert (merged.candidate_format, merged.small_model) == (default_format, False)
    assert merged.timeout_s == QWEN25_CODER_15B.request_timeout_s  # not set: the model's value
    # Through the whole settings path (file, environment and flags): load_settings keeps what was set.
    settings = local_llm_settings(load_settings(overrides={"ray": {"max_in_flight": 8}, "llm": {"max_tokens": 2048}}), url)
    assert settings.ray.max_in_flight == 8 and settings.llm.max_tokens == 2048
    assert settings.llm.temperature == QWEN25_CODER_15B.temperature


def test_run_settings_cap_operators_in_flight_unless_the_user_chose(monkeypatch):
    url = "http://127.0.0.1:1234/v1"
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3})
    settings = local_llm_settings(load_settings(), url)
    assert settings.ray.max_in_flight == QWEN25_CODER_15B.max_in_flight == 2
    assert settings.llm.base_url == url and settings.llm.candidate_format == "kernel"
    chosen = local_llm_settings(load_settings(overrides={"ray": {"max_in_flight": 5}}), url)
    assert chosen.ray.max_in_flight == 5
    # On 2 cores a second operator would halve the model's threads for an overlap of seconds.
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1})
    assert local_llm_settings(load_settings(), url).ray.max_in_flight == 1
    assert local_llm_settings(load_settings(overrides={"ray": {"max_in_flight": 2}}), url).ray.max_in_flight == 2


def test_prompt_style_lessons_and_exemplars_follow_the_model_unless_set():
    url = "http://127.0.0.1:1234/v1"
    unset = local_llm_settings(load_settings(), url)
    assert unset.llm.prompt_style == QWEN25_CODER_15B.prompt_style == "plain"
    assert unset.episode.lessons is QWEN25_CODER_15B.lessons is False
    assert unset.llm.exemplar_as_example is QWEN25_CODER_15B.exemplar_as_example is True
    # Explicit values win, even where they equal what an endpoint gets by default.
    chosen = local_llm_settings(load_settings(overrides={"llm": {"prompt_style": "full", "exemplar_as_example": False},
                                                         "episode": {"lessons": True}}), url)
    assert chosen.llm.prompt_style == "full" and chosen.episode.lessons is True
    assert chosen.llm.exemplar_as_example is False
    assert load_settings().llm.exemplar_as_example is None  # an endpoint's model: the generic example


def test_the_request_seeds_follow_the_server_seed_unless_set():
    """Issue 64.5: the local model's drafts are reproducible run after run (its server's seed, 0
    when unset, names the sequence of request seeds); an explicit llm.seed wins."""
    url = "http://127.0.0.1:1234/v1"
    assert local_llm_settings(load_settings(), url).llm.seed == 0
    assert local_llm_settings(load_settings(overrides={"local_llm": {"seed": 5}}), url).llm.seed == 5
    assert local_llm_settings(load_settings(overrides={"local_llm": {"seed": 5}, "llm": {"seed": 9}}), url).llm.seed == 9
    assert load_settings().llm.seed is None  # an endpoint: fresh seeds each run
