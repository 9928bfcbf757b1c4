#!/usr/bin/env bash
# Set everything up and run the test suite. Extra arguments go to pytest (e.g. -m slow).
# The 15 slowest tests are listed at the end: the suite should stay well under 15 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
set +e
.venv/bin/python -m pytest --durations=15 "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "test: pytest collected no tests: that is a failure, not a pass" >&2
    exit 1
fi
exit "$status"
