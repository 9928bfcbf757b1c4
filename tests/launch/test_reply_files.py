"""RUN_DIR/replies/ (launch/reply_files.py): the reply of an attempt no code came from is kept,
named by its line in attempts.jsonl, scrubbed and bounded; an operator that starts again drops
what its earlier try left; a reply the disk cannot take costs the attempt nothing."""

from __future__ import annotations

import json
import os

from actors.messages import Attempt
from launch.campaign import RunFolder
from launch.reply_files import REPLY_LIMIT, ReplyFolder


def no_code(task: str = "4_ReLU", iteration: int = 1, reply: str | None = "I think ReLU is max(x, 0).") -> Attempt:
    return Attempt(run_id="r", task=task, iteration=iteration, stage="draft", gate="no_code", category="no_code",
                   reason="no code block defines a `kernel` function", reply=reply)


def lines(folder: RunFolder) -> list[dict]:
    return [json.loads(line) for line in folder.attempts_path.read_text().splitlines()]


def test_a_no_code_attempt_s_reply_is_kept_and_its_line_names_the_file(tmp_path):
    folder = RunFolder(tmp_path)
    folder.append_attempt(no_code())
    folder.append_attempt(Attempt(run_id="r", task="4_ReLU", iteration=2, stage="draft", gate="compile",
                                  category="compile_error", reason="error: expected ';'"))
    first, second = lines(folder)
    assert first["reply_file"] == "replies/4_ReLU/1-draft.md" and "reply" not in first
    assert second["reply_file"] is None  # code came from this one: its source is what the verdict is about
    text = (tmp_path / first["reply_file"]).read_text()
    assert text.startswith("# 4_ReLU, iteration 1 (draft): no code block defines a `kernel` function")
    assert "I think ReLU is max(x, 0)." in text
    assert json.loads(Attempt(**first).model_dump_json())["reply_file"] == first["reply_file"]  # read back as it was


def test_the_kept_reply_is_scrubbed_and_bounded(tmp_path, monkeypatch):
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-0123456789abcdef")
    reply = "echoing tok-0123456789abcdef and sk-abcdefghijklmnopqrstuvwx\n" + "y" * (3 * REPLY_LIMIT)
    kept = ReplyFolder(tmp_path).record(no_code(reply=reply))
    text = (tmp_path / kept.reply_file).read_text()
    assert "tok-0123456789abcdef" not in text and "sk-abcdefghijkl" not in text and "[redacted]" in text
    assert len(text) < REPLY_LIMIT + 500 and "characters cut" in text


def test_an_operator_that_starts_again_drops_its_earlier_replies(tmp_path):
    replies = ReplyFolder(tmp_path)
    kept = [replies.record(no_code(task, iteration=i)) for task in ("4_ReLU", "7_Sigmoid") for i in (1, 2)]
    replies.operator_started("4_ReLU")
    assert [(tmp_path / a.reply_file).exists() for a in kept] == [False, False, True, True]


def test_a_reply_the_disk_cannot_take_is_left_out_and_the_attempt_recorded(tmp_path):
    folder = RunFolder(tmp_path)
    (tmp_path / "replies").write_text("a file where the folder should be")  # any OSError on the write
    folder.append_attempt(no_code())
    [line] = lines(folder)
    assert line["gate"] == "no_code" and line["reply_file"] is None
    assert os.listdir(tmp_path).count("replies") == 1
