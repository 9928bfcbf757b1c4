"""The node lock across processes: shared holds together, an exclusive hold alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import json, random, sys, time
from pathlib import Path
from npu_pool.node_gate import NodeLock
random.seed(int(sys.argv[2]))
holds = []
for _ in range(12):
    lock = NodeLock(Path(sys.argv[1]))
    with lock.shared():
        time.sleep(random.random() * 0.02)
        if random.random() < 0.6:
            hold = lock.exclusive()
            time.sleep(random.random() * 0.02)
            hold.release()
    holds += lock.holds
print(json.dumps(holds))
"""


def test_an_exclusive_hold_never_overlaps_another_process_hold(tmp_path):
    root = Path(__file__).resolve().parents[2]
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path), str(seed)], stdout=subprocess.PIPE,
                              cwd=root, text=True) for seed in range(4)]
    holds = [(i, *h) for i, p in enumerate(procs) for h in json.loads(p.communicate(timeout=120)[0])]
    exclusive = [h for h in holds if h[1] == "exclusive"]
    assert exclusive and any(h[1] == "shared" for h in holds)
    for who, _, start, end in exclusive:
        assert not [h for h in holds if h[0] != who and h[2] < end and start < h[3]]
