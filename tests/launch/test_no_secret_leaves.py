"""No secret leaves through a kernel, end to end: a campaign (one process, the scripted OpenAI
server on loopback, the real harness and bank) whose first candidate reads secrets planted in
the home directory, in the checkout (a `.env` holding the LLM API key) and in the memory bank,
and throws them in its exception text. Its verdict becomes an attempt record, a lesson in the
bank and part of the next prompt: none of them may hold a secret.

The candidate's own words ("unreadable:13") do reach the later requests (the lesson request's
outcome, the retry's previous attempt), so the channel is real; with the read rules switched
off (checked by hand, 2026-11-25, in a copy of the tree) the home and bank secrets reach them.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
from pathlib import Path

from launch.cli import main
from tests.actors import replies
from tests.actors.openai_server import OpenAITestServer, ScriptedAgent
from tests.actors.replies import SIGNATURE_ARGS
from tests.launch.test_run_command import FAST_HARNESS

ROOT = Path(__file__).resolve().parents[2]

# Past the static gate (a warning for <unistd.h> only), as a prompt-injected model could write it.
# The file is opened with glibc's mount-table reader `setmntent` (an fopen of any path) and read
# with `fgets`: the gate rejects `open`, `read`, `fopen`, `freopen64` and glibc's own spellings of
# them (`__open_2`, `__read_chk`, ...; npu_pool/antihack/source.py, own_names.py), but cannot list
# every libc entry point that opens a file (docs/antihack.md, "Known limits"), so the read
# confinement has to stop a kernel that the static gate lets through. If the gate learns this
# spelling too, this test needs another one it does not know (it used `freopen64` until the gate
# learnt it, 2026-12-03).
HOSTILE = """```cpp
#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <cstdio>
extern "C" FILE* setmntent(const char*, const char*);
static std::string slurp(const char* path) {
    FILE* file = setmntent(path, "r");
    if (file == nullptr) return "unreadable:" + std::to_string(errno);
    char buf[256] = {0};
    const bool got = fgets(buf, sizeof(buf), file) != nullptr;
    return got ? std::string(buf) : std::string();
}
extern "C" void kernel(SIGNATURE) {
    std::string got;
    for (const char* p : {PATHS}) got += std::string(p) + "=" + slurp(p) + ";";
    throw std::runtime_error("LEAK " + got);
}
```"""


def _planted(tmp_path: Path, api_key: str) -> dict[str, tuple[Path, str]]:
    bank = tmp_path / "bank"
    bank.mkdir()
    found = {}
    for place, folder in (("home", Path(pwd.getpwuid(os.getuid()).pw_dir)), ("checkout", ROOT), ("bank", bank)):
        text = f"OPENAI_API_KEY={api_key}" if place == "checkout" else f"evkplanted_{place}_{secrets.token_hex(12)}"
        path = folder / f".evk-planted-{secrets.token_hex(4)}.env"
        path.write_text(text + "\n")
        found[place] = (path, text.split("=")[-1])
    return found


def test_a_hostile_kernel_puts_no_secret_in_the_bank_the_run_folder_or_a_later_prompt(tmp_path, capsys):
    api_key = f"evk-campaign-key-{secrets.token_hex(12)}"
    planted = _planted(tmp_path, api_key)
    paths = ", ".join(f'"{path}"' for path, _ in planted.values())
    hostile = HOSTILE.replace("SIGNATURE", SIGNATURE_ARGS).replace("PATHS", paths)
    try:
        with OpenAITestServer(api_key=api_key) as server:
            server.responder = ScriptedAgent([hostile, replies.BROKEN])  # the second only has to be asked for
            code = main([*FAST_HARNESS, "--set", f"llm.api_key={api_key}", "run", "--no-ray", "--tasks", "4_ReLU*",
                         "--llm-base-url", server.base_url, "--llm-model", server.model,
                         "--memory", str(tmp_path / "bank"), "--out", str(tmp_path / "run"), "--backend", "cpu",
                         "--iterations", "2"])
            # what each request carries to the model (its Authorization header holds the key, rightly)
            requests = json.dumps([r["body"] for r in server.requests])
    finally:
        for path, _ in planted.values():
            path.unlink(missing_ok=True)
    assert code == 0, capsys.readouterr().err[-2000:]
    attempts = (tmp_path / "run" / "attempts.jsonl").read_text()
    assert [json.loads(line)["gate"] for line in attempts.splitlines()][0] == "runtime"
    bank_bytes = b"".join(p.read_bytes() for p in (tmp_path / "bank").rglob("*") if p.is_file()
                          and p.name != planted["bank"][0].name)
    run_bytes = b"".join(p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file())
    out, err = capsys.readouterr()
    for place, (_, secret) in planted.items():
        assert secret not in requests, f"the {place} secret reached a request to the LLM"
        assert secret.encode() not in run_bytes, f"the {place} secret reached the run folder"
        assert secret.encode() not in bank_bytes, f"the {place} secret reached the memory bank"
        assert secret not in out + err, f"the {place} secret reached the terminal or the log"
    # the channel is real: the candidate's own words reached the later requests (the lesson's, the retry's)
    assert f"{planted['home'][0]}=unreadable:13" in requests
    assert f"{planted['bank'][0]}=unreadable:13" in requests
