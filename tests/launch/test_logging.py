"""Secrets never reach the logs, in JSON or on a terminal."""

import json

import structlog

from launch.logging import REDACTED, configure_logging


def _last_json_line(text: str) -> dict:
    return json.loads(text.strip().splitlines()[-1])


def test_known_secret_is_redacted_everywhere(capsys):
    configure_logging(json_logs=True, level="info", secrets=["hunter2-very-secret"])
    structlog.get_logger("t").info("calling endpoint", detail="key=hunter2-very-secret in url", nested={"x": ["hunter2-very-secret"]})
    event = _last_json_line(capsys.readouterr().err)
    assert "hunter2" not in json.dumps(event)
    assert REDACTED in event["detail"]


def test_secret_keys_and_shapes_are_redacted(capsys):
    configure_logging(json_logs=True, level="info")
    structlog.get_logger("t").info(
        "request", api_key="anything-at-all", headers={"Authorization": "Bearer abcdefgh12345678"}, note="used sk-abcdefghijklmnop"
    )
    event = _last_json_line(capsys.readouterr().err)
    assert event["api_key"] == REDACTED
    assert event["headers"]["Authorization"] == REDACTED
    assert "sk-abcdefghijklmnop" not in event["note"]


def test_console_renderer_is_readable(capsys):
    configure_logging(json_logs=False, level="info", secrets=["console-secret-value"])
    structlog.get_logger("t").info("hello world", token="console-secret-value")
    err = capsys.readouterr().err
    assert "hello world" in err and "console-secret-value" not in err
    configure_logging(json_logs=True, level="info")


def test_level_filters(capsys):
    configure_logging(json_logs=True, level="warning")
    structlog.get_logger("t").info("hidden")
    structlog.get_logger("t").warning("shown")
    err = capsys.readouterr().err
    assert "shown" in err and "hidden" not in err
    configure_logging(json_logs=True, level="info")


def test_logs_follow_a_replaced_stderr(capsys, monkeypatch):
    import io

    configure_logging(json_logs=True, level="info")
    logger = structlog.get_logger("t")
    replacement = io.StringIO()
    monkeypatch.setattr("sys.stderr", replacement)
    logger.info("to the new stream")
    assert "to the new stream" in replacement.getvalue()


def test_token_counts_are_not_mistaken_for_secrets(capsys):
    configure_logging(json_logs=True, level="info")
    structlog.get_logger("t").info("usage", tokens_prompt=120, auth_token="abcd-secret-value")
    event = _last_json_line(capsys.readouterr().err)
    assert event["tokens_prompt"] == 120
    assert event["auth_token"] == REDACTED


def _log_in_child(detail: str) -> int:
    structlog.get_logger("child").info("from the child", detail=detail)
    return 0


def test_a_spawned_child_logs_as_its_parent(capfd):
    # The run command seeds a fresh bank in a spawned child: its lines belong in the run's JSON log.
    from launch.commands.run_prepare import run_in_child

    configure_logging(json_logs=True, level="info", secrets=["child-secret-value"])
    assert run_in_child(_log_in_child, "carries child-secret-value") == 0
    event = _last_json_line(capfd.readouterr().err)
    assert event["event"] == "from the child" and event["level"] == "info"
    assert "child-secret-value" not in event["detail"] and REDACTED in event["detail"]
