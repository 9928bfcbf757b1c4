#!/usr/bin/env bash
# Set everything up and run the test suite. Extra arguments go to pytest (e.g. -m slow).
# The default suite runs on 2 worker processes (pytest-xdist): its tests wait on sandboxes, servers
# and Ray as much as they compute, so 2 workers on 2 cores take 9 minutes instead of 15.
# TEST_WORKERS=1 runs it in one process. The slow suite (-m slow) always runs in one: its tests
# start whole clusters and time a real model. The 15 slowest tests are listed at the end: the suite
# should stay well under 15 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
workers="${TEST_WORKERS:-2}"
for arg in "$@"; do
    case "$arg" in *slow*|-n|-n*|--numprocesses*) workers=1 ;; esac  # slow, or workers chosen by the caller
done
parallel=()
[ "$workers" -gt 1 ] && parallel=(-n "$workers")
set +e
.venv/bin/python -m pytest "${parallel[@]}" --durations=15 "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "test: pytest collected no tests: that is a failure, not a pass" >&2
    exit 1
fi
exit "$status"
