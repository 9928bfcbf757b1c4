"""The message schemas other packages build on: a snapshot of their field names."""

from __future__ import annotations

from npu_pool.verdict import Candidate, ProfileReport, Verdict, detect_format


def test_verdict_fields_are_stable():
    assert list(Verdict.model_json_schema()["properties"]) == [
        "feasible", "gate", "category", "reason", "details", "sizes", "flags", "sandbox", "timings"]
    gate = Verdict.model_json_schema()["properties"]["gate"]
    assert gate["enum"] == ["hack", "compile", "correctness", "runtime", "ok", "infra"]


def test_profile_report_fields_are_stable():
    assert list(ProfileReport.model_json_schema()["properties"]) == [
        "median_ms", "iqr_ms", "trials", "baseline_eager_ms", "baseline_compile_ms", "baseline_compile_error",
        "speedup_vs_eager", "speedup_vs_compile", "achieved_gbps", "achieved_gflops", "bound", "hints",
        "flags", "sizes", "timing", "stages"]


def test_candidate_and_format_detection():
    assert list(Candidate.model_json_schema()["properties"]) == ["source", "format"]
    assert detect_format("import torch\nclass ModelNew(torch.nn.Module):\n    pass\n") == "modelnew"
    assert detect_format('extern "C" void kernel(const float* x, float* out) {}') == "kernel"
