"""Verdict text is data, not a channel: configured secrets and credential-shaped text are
redacted, text is bounded, and compiler output keeps only the candidate's own diagnostics."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from npu_pool import redaction
from npu_pool.redaction import REDACTED, bound, own_diagnostics, scrub
from npu_pool.verdict import Evaluation, ProfileReport, Verdict

CREDENTIALS = {
    "pem": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----",
    "pem_truncated": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "openai": "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e",
    "github": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "slack": "xoxb-2400-1234567890-abcdefghijkl",
    "huggingface": "hf_abcdefghijklmnopqrstuvwxyz0123",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "bearer": "Authorization: Bearer abcdef0123456789abcdef",
}


@pytest.mark.parametrize("kind", sorted(CREDENTIALS))
def test_credential_shaped_text_is_redacted(kind):
    secret = CREDENTIALS[kind]
    text = scrub(f"terminate called after throwing: what(): {secret} (read from a file)")
    assert REDACTED in text
    assert secret.splitlines()[-1] not in text and secret.split()[-1] not in text
    assert text.startswith("terminate called after throwing: what(): ")


def test_configured_secrets_are_redacted(monkeypatch, tmp_path):
    token_file = tmp_path / "auth_token"
    token_file.write_text("raytoken-0123456789abcdef\n")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(token_file))
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plainword-token-value")
    monkeypatch.setenv("DB_SECRET_VALUE", "another plain value")
    monkeypatch.setenv("SHORT_KEY", "1234567")  # under 8 characters: too common to redact
    monkeypatch.setenv("HARMLESS_SETTING", "not-a-secret-at-all")
    redaction.register("configured-llm-key-42")
    text = scrub("raytoken-0123456789abcdef plainword-token-value another plain value 1234567 "
                 "not-a-secret-at-all configured-llm-key-42")
    assert text == f"{REDACTED} {REDACTED} {REDACTED} 1234567 not-a-secret-at-all {REDACTED}"


def test_an_assignment_keeps_its_name_and_loses_its_value():
    assert scrub('api_key = "abcdefgh12345678", password: hunter2hunter2') == \
        f'api_key = "{REDACTED}", password: {REDACTED}'


def test_text_is_bounded_keeping_head_and_tail():
    text = "head " + "x" * 10_000 + " tail"
    out = bound(text, 500)
    assert len(out) == 500 and out.startswith("head ") and out.endswith(" tail") and "characters cut" in out


def test_a_real_compiler_log_keeps_only_the_candidate_own_diagnostics(tmp_path):
    """g++ quotes a file the candidate #included; the filter leaves those lines out (this is
    the compile channel's second lock, shown here with reads unconfined)."""
    if shutil.which("g++") is None:
        pytest.skip("no g++")
    secret = "evkfiltered_0123456789abcdef"
    (tmp_path / "planted.txt").write_text(secret + "\n")
    (tmp_path / "kernel.cpp").write_text(f'int f() {{ return x; }}\n#include "{tmp_path / "planted.txt"}"\n')
    log = subprocess.run(["g++", "-fsyntax-only", "kernel.cpp"], cwd=tmp_path, capture_output=True, text=True).stderr
    assert secret in log  # the compiler does quote it
    kept = own_diagnostics(log)
    assert secret not in kept
    assert "kernel.cpp:1" in kept and "was not declared in this scope" in kept  # the candidate's own error stays
    assert "a diagnostic about another file was left out" in kept


def test_a_verdict_and_a_profile_come_back_scrubbed(monkeypatch):
    monkeypatch.setenv("VENDOR_API_KEY", "vendor-key-abcdef123")
    log = "In file included from kernel.cpp:1:\n/home/u/.env:1:1: error: 'OPENAI' does not name a type\n" \
          "    1 | OPENAI=vendor-key-abcdef123\n      | ^~~~~~\nkernel.cpp:3:5: error: expected ';'\n"
    verdict = Verdict(feasible=False, gate="compile", category="compile_error", reason="vendor-key-abcdef123 " * 100,
                      details=log + "z" * 20_000)
    report = ProfileReport(median_ms=1.0, iqr_ms=0.0, trials=3, baseline_eager_ms=1.0, speedup_vs_eager=1.0,
                           baseline_compile_error="failed: sk-abcdefghijklmnopqrstuv", hints=[])
    clean = Evaluation(verdict=verdict, profile=report).scrubbed()
    dumped = clean.model_dump_json()
    assert "vendor-key-abcdef123" not in dumped and "OPENAI" not in dumped and "sk-abcdef" not in dumped
    assert "kernel.cpp:3:5: error: expected ';'" in clean.verdict.details
    assert len(clean.verdict.details) <= 4000 and len(clean.verdict.reason) <= 500
