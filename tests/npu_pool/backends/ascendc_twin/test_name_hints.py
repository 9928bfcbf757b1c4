"""A compile error naming an undeclared identifier says the nearest name the twin declares
(issue 64, point 1: `GMADDR` for `GM_ADDR` in 15 of v5's drafts): through the real twin build."""

from __future__ import annotations

import pytest

from memory_actor import ladder
from npu_pool.backends.ascendc_twin.build import summarize_build_errors, twin_names
from npu_pool.tasks.spec import load_task
from npu_pool.verdict import Candidate
from npu_pool.verifier import verify
from tests.npu_pool.harness_support import SMALL_BYTES, harness_config

RUNG = next(r for r in ladder.rungs("ascendc") if r.task_id == "ex1_Log1pAbs" and r.rung == "first")


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    path = tmp_path_factory.mktemp("hints") / "ex1_Log1pAbs.py"
    path.write_text(ladder.task_source("ex1_Log1pAbs")[1])
    return load_task(path, max_bytes=SMALL_BYTES)


@pytest.mark.parametrize(("wrong", "right"), [("GM_ADDR x", "GMADDR x"), ("GlobalTensor<float> xGm", "GlobalTensr<float> xGm")])
def test_an_undeclared_name_close_to_a_declared_one_is_named_in_the_feedback(task, wrong, right):
    source = RUNG.content.replace(wrong, right, 1)
    assert source != RUNG.content
    verdict = verify(task, Candidate(source=source, format="kernel"), harness_config(backend="npu-twin"))
    assert (verdict.feasible, verdict.gate) == (False, "compile")
    expected = wrong.split()[0].split("<")[0]
    assert f"did you mean '{expected}'?" in verdict.reason, verdict.reason


def test_a_name_nothing_is_close_to_gets_no_guess():
    log = "/w/kernel.cpp:5:9: error: \u2018zzqqv\u2019 was not declared in this scope\n"
    assert "did you mean" not in summarize_build_errors(log)
    assert "GM_ADDR" in twin_names() and "LocalTensor" in twin_names()
    assert not any(name.startswith(("twin_", "_")) for name in twin_names())
