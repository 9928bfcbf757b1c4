#!/usr/bin/env bash
# Create .venv in the repository root and install EvoKernel into it, editable. Idempotent.
# Usage: bash scripts/setup.sh [EXTRAS]      e.g. bash scripts/setup.sh dev
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
extras="${1:-}"

"$PYTHON" - <<'PY' || { echo "setup: EvoKernel needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)
PY

if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv"
    "$PYTHON" -m venv .venv
fi
pip=(.venv/bin/python -m pip --disable-pip-version-check)
# torch first and pinned: the CPU build of 2.13.0 is what this machine has; an unpinned
# torch would pull a multi-GB CUDA build. The project's own range admits it.
echo "setup: installing torch 2.13.0"
"${pip[@]}" install -q "torch==2.13.0"
echo "setup: installing evokernel${extras:+[$extras]} (editable)"
"${pip[@]}" install -q -e ".${extras:+[$extras]}"
echo "setup: done ($(.venv/bin/evokernel --version))"
