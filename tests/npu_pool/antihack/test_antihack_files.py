"""The static anti-hack gate on whole files: hostile candidates are rejected (or left to the
dynamic gate their header names), the good candidates pass, and summarise() reports it."""

from __future__ import annotations

import re

import pytest

from npu_pool.antihack import Finding, summarise

from .antihack_support import GOOD, HERE, HOSTILE, _check_file

# --- the hostile folder -------------------------------------------------------------------


def test_hostile_folder_covers_every_hack_of_design_section_6():
    names = {p.stem for p in HOSTILE}
    for hack in ("torch_compute", "fallback_try_except", "subclass_model", "call_model", "cache_by_pointer",
                 "cache_by_shape", "return_input", "return_constant", "uninitialised_output", "mutate_input",
                 "other_stream", "other_thread", "patch_timer", "patch_event", "lazy_tensor_subclass",
                 "lower_precision", "network", "filesystem", "hang", "crash_null_write", "allocate_unbounded"):
        assert hack in names, f"no hostile candidate for {hack}"


@pytest.mark.parametrize("path", HOSTILE, ids=lambda p: p.name)
def test_hostile_headers_name_an_existing_task_and_a_gate(path):
    head = path.read_text().splitlines()[:3]
    comment = "#" if path.suffix == ".py" else "//"
    task = re.fullmatch(rf"{comment} task: (level\d/\d+_\w+\.py)", head[0])
    gate = re.fullmatch(rf"{comment} expect-gate: (hack|compile|correctness|runtime)", head[1])
    assert task and gate and head[2].startswith(f"{comment} hack: "), head
    assert (HERE.parents[1] / "suites" / "cpu" / task.group(1)).is_file()


@pytest.mark.parametrize("path", HOSTILE, ids=lambda p: p.name)
def test_static_gate_rejects_exactly_the_hostile_files_marked_hack(path):
    gate = re.search(r"expect-gate: (\w+)", path.read_text()).group(1)
    rejected, reason, details = summarise(_check_file(path))
    assert rejected == (gate == "hack"), f"{path.name}: {reason}\n{details}"


# --- no false positives ---------------------------------------------------------------------


@pytest.mark.parametrize("path", GOOD, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_good_candidates_are_clean(path):
    findings = _check_file(path)
    assert findings == [], summarise(findings)[2]


# --- summarise ------------------------------------------------------------------------------


def test_summarise_reports_the_first_reject_and_lists_everything():
    findings = [
        Finding(rule="cast", severity="warn", message="w", line=3),
        Finding(rule="torch_compute", severity="reject", message="use your kernel", line=9),
        Finding(rule="fallback", severity="reject", message="no try", line=5),
    ]
    rejected, reason, details = summarise(findings)
    assert rejected
    assert reason == "anti-hack: fallback (line 5): no try (and 1 more)"
    assert details.splitlines() == [
        "reject fallback (line 5): no try",
        "reject torch_compute (line 9): use your kernel",
        "warn cast (line 3): w",
    ]
    assert summarise([findings[0]])[:2] == (False, "anti-hack: 1 warning(s) for review")
    assert summarise([]) == (False, "anti-hack: clean", "")

