"""Deterministic lessons from real verdicts: the CPU harness compiles and checks the kernels."""

from __future__ import annotations

import torch

from actors.evaluator import Evaluator
from actors.lessons import Failure, compiler_error, failure_lesson
from npu_pool.backends import get_backend
from npu_pool.gates.correctness import compare
from npu_pool.verdict import Candidate
from npu_pool.verifier import sandboxed_gates
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


THROWS = (f'```cpp\n#include <cstdint>\n#include <stdexcept>\nextern "C" void kernel({SIGNATURE_ARGS}) {{\n'
          '    if (x_d1 > 0) throw std::runtime_error("x_d1 must be a multiple of 64, got an odd tile");\n'
          '    out[0] = x[0];\n}\n```')
RAISES = ('```python\nimport torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n'
          '    def __init__(self):\n        super().__init__()\n'
          '        self.tiles = torch.zeros(3, 7).view(5, -1)  # a shape that does not divide\n\n'
          '    def forward(self, x):\n        return torch.relu(x)\n```')


def test_a_thrown_cpp_exception_is_named_with_its_message(relu_task, harness_config):
    """The verdict's first details line is the sandbox's ("the sandboxed process ran ..."):
    the lesson shows the exception's type and what() instead."""
    code, verdict = verdict_of(relu_task, harness_config, THROWS)
    assert (verdict.gate, verdict.category) == ("runtime", "abort"), verdict.model_dump_json(indent=1)
    assert verdict.details.startswith("the sandboxed process ran")
    lesson = failure_lesson("4_ReLU", Failure(stage="draft", gate=verdict.gate, category=verdict.category,
                                              reason=verdict.reason, details=verdict.details, code=code))
    assert "Exception: std::runtime_error: x_d1 must be a multiple of 64, got an odd tile" in lesson, lesson
    assert "sandboxed process ran" not in lesson


def test_a_python_exception_is_named_with_the_candidate_line_it_came_from(relu_task, harness_config):
    code = RAISES.split("```")[1].split("\n", 1)[1]
    # past the static gate (its forward is torch compute): the sandbox's verdict is what counts here
    verdict, _ = sandboxed_gates(relu_task, Candidate(source=code, format="modelnew"), harness_config,
                                 get_backend("cpu"), profile=False)
    assert verdict.gate == "runtime" and "RuntimeError" in verdict.reason, verdict.model_dump_json(indent=1)
    assert "candidate.py\", line" in verdict.details  # the traceback's tail
    lesson = failure_lesson("4_ReLU", Failure(stage="draft", gate=verdict.gate, category=verdict.category,
                                              reason=verdict.reason, details=verdict.details, code=code))
    assert "RuntimeError: shape '[5, -1]' is invalid for input of size 21" in lesson, lesson
    assert lesson.count("is invalid for input of size") == 1  # the reason quotes it: not repeated
    assert "Raised at: self.tiles = torch.zeros(3, 7).view(5, -1) # a shape that does not divide" in lesson


def test_an_exception_s_secret_is_redacted_before_its_line_is_cut(monkeypatch):
    """Scrubbed first, then bounded: a secret across the cut would not be recognised after it."""
    secret = "evk-lesson-key-" + "q" * 40
    monkeypatch.setenv("TEAM_API_KEY", secret)
    details = ("the sandboxed process ran 0.4 s and was in stage 'correctness'\nstderr (last lines):\n"
               "terminate called after throwing an instance of 'std::runtime_error'\n"
               f"  what():  {'x' * 150} {secret}\n")
    lesson = failure_lesson("4_ReLU", Failure(stage="draft", gate="runtime", category="abort",
                                              reason="the candidate aborted (SIGABRT) during correctness",
                                              details=details, code=""))
    assert "Exception: std::runtime_error: xxx" in lesson
    assert "evk-lesson-key" not in lesson and "qqqq" not in lesson


def test_a_fix_lesson_pairs_the_compilers_error_with_the_lines_that_changed(relu_task, harness_config):
    """Issue 41: a draft that passes after a failed one leaves what changed between them: the
    failure's gate and first error, then the changed lines (comments and blank lines left out),
    `- old` and `+ new`; nothing when only comments changed."""
    from actors.lessons import fix_lesson
    from actors.messages import Feedback

    code, verdict = verdict_of(relu_task, harness_config, replies.BROKEN)
    fixed = replies.FAST.split("```")[1].split("\n", 1)[1]
    failed = Feedback(gate=verdict.gate, reason=verdict.reason, details=verdict.details, code=code)
    lesson = fix_lesson("4_ReLU", "elementwise", failed, fixed)
    head, *changes = lesson.splitlines()
    assert head.startswith("elementwise kernel (4_ReLU): a draft failed at the compile gate")
    assert "First error: line 2: error:" in head and head.endswith("what changed:")
    assert "- for (int64_t i = 0; i < x_d0 * x_d1; ++i) out[i] = y[i];" in changes
    assert any(line.startswith("+ ") for line in changes) and len(lesson) <= 700
    assert fix_lesson("4_ReLU", "elementwise", failed, "// a comment\n" + code) is None
