"""The environment a sandboxed worker starts with: an allow-list of the machine's variables, never
one whose name says it holds a secret, and the harness's own settings (its import path, caches)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from npu_pool.paths import child_pythonpath

ENV_ALLOW = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
             "XDG_CACHE_HOME", "CUDA_HOME", "CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES",
             "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "ASCEND_AICPU_PATH")
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL|AUTH", re.IGNORECASE)


def scrubbed_env(extra_allow: tuple[str, ...], work_dir: Path, cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ENV_ALLOW + extra_allow and not SECRET_NAME.search(k)}
    env.update(
        TMPDIR=str(work_dir / "tmp"),
        PYTHONPATH=child_pythonpath(),  # this harness, whatever the venv's editable install points at
        PYTHONDONTWRITEBYTECODE="1",
        TORCH_EXTENSIONS_DIR=str(cache_dir / "torch_extensions"),
        TORCHINDUCTOR_CACHE_DIR=str(cache_dir / "inductor"),
        MALLOC_ARENA_MAX="2",  # glibc reserves 64 MiB of address space per arena otherwise
    )
    return env
