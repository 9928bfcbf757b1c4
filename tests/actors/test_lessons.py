"""Deterministic lessons from real verdicts: the CPU harness compiles and checks the kernels."""

from __future__ import annotations

import torch

from actors.evaluator import Evaluator
from actors.lessons import Failure, compiler_error, failure_lesson
from npu_pool.correctness import compare
from npu_pool.verdict import Candidate
from tests.actors import replies
from tests.actors.replies import SIGNATURE_ARGS


def verdict_of(task, harness_config, reply: str):
    code = reply.split("```")[1].split("\n", 1)[1]
    verdict = Evaluator(harness_config).evaluate(task, Candidate(source=code, format="kernel")).verdict
    return code, verdict


def lesson_of(task, harness_config, reply: str) -> str:
    code, verdict = verdict_of(task, harness_config, reply)
    assert not verdict.feasible
    return failure_lesson("4_ReLU", Failure(stage="draft", gate=verdict.gate, category=verdict.category,
                                            reason=verdict.reason, details=verdict.details, code=code))


def test_a_compile_failure_becomes_gate_first_error_and_offending_line(relu_task, harness_config):
    lesson = lesson_of(relu_task, harness_config, replies.BROKEN)
    first, error, offending = lesson.splitlines()
    assert first.startswith("4_ReLU draft attempt failed at the compile gate")
    # g++ quotes with ‘y’ or 'y' depending on the locale.
    assert error.startswith("First error: line 2: error: ") and "y’ was not declared" in error.replace("'", "’")
    assert offending == "Offending line: for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = y[i];"


def test_another_operators_parameter_list_is_named_as_the_conflict_it_causes(relu_task, harness_config):
    # What a small model does after copying an exemplar of another operator: its signature too.
    copied = ('```cpp\n#include <cstdint>\nextern "C" void kernel(const float* A, const float* B, float* out, '
              'int64_t n) {\n    for (int64_t i = 0; i < n; ++i) out[i] = A[i] + B[i];\n}\n```')
    lesson = lesson_of(relu_task, harness_config, copied)
    assert "First error: line 2: error: conflicting declaration of C function" in lesson
    assert 'Offending line: extern "C" void kernel(const float* A, const float* B, float* out, int64_t n) {' in lesson


def test_a_near_miss_names_the_worst_element_and_the_constant_ratio(relu_task, harness_config):
    doubled = (f'```cpp\nextern "C" void kernel({SIGNATURE_ARGS}) {{\n'
               '    for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = x[i] > 0.f ? 2.f * x[i] : 0.f;\n}\n```')
    _, verdict = verdict_of(relu_task, harness_config, doubled)
    assert verdict.gate == "correctness" and "ratio got/expected ≈ 2 over all mismatches" in verdict.details
    lesson = lesson_of(relu_task, harness_config, doubled)
    assert "expected" in lesson and "got" in lesson and "ratio got/expected ≈ 2 over all mismatches" in lesson


def test_compare_reports_a_constant_ratio_or_offset_only_when_there_is_one():
    ref = torch.linspace(1, 2, 100)
    assert "ratio got/expected ≈ 0.5 over all mismatches" in compare(ref, ref * 0.5, 1e-4, 1e-4, False)
    assert "offset got-expected ≈ 3 over all mismatches" in compare(ref, ref + 3, 1e-4, 1e-4, False)
    noisy = compare(ref, ref + torch.linspace(0.1, 0.9, 100), 1e-4, 1e-4, False)
    assert "ratio" not in noisy and "offset" not in noisy and "expected" in noisy


def test_compiler_logs_of_other_files_fall_back_to_the_echoed_line():
    log = ("main.cpp:7:12: error: 'foo' was not declared in this scope\n"
           "    7 |     return foo(x);\n      |            ^~~\n")
    assert compiler_error(log, "unrelated") == ("line 7: error: 'foo' was not declared in this scope", "    return foo(x);")
    assert compiler_error("ld: cannot find -lbar", "") is None


def test_a_lesson_never_carries_a_secret(monkeypatch):
    """Lessons are retrieved into prompts and exported with the bank: scrubbed of the
    environment's secrets, the registered API key and credential-shaped text."""
    from npu_pool import redaction

    monkeypatch.setenv("PARTNER_API_KEY", "partner-key-1234567890")
    redaction.register("registered-llm-key-abcdef")
    details = "terminate called after throwing an instance of 'std::runtime_error'\n  what():  " \
              "partner-key-1234567890 registered-llm-key-abcdef AKIAIOSFODNN7EXAMPLE"
    lesson = failure_lesson("4_ReLU", Failure(stage="draft", gate="runtime", category="abort",
                                              reason="aborted: registered-llm-key-abcdef", details=details, code=""))
    for secret in ("partner-key-1234567890", "registered-llm-key-abcdef", "AKIAIOSFODNN7EXAMPLE"):
        assert secret not in lesson
    assert "[redacted]" in lesson and "runtime gate" in lesson
