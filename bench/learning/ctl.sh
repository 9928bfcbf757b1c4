#!/usr/bin/env bash
# Runs a learning benchmark design (v4, v5) in its frozen clones, one per domain
# (docs/learning_benchmark.md, "v4: running it", "v5: running it").
#
#   bash bench/learning/ctl.sh v5 prepare [cpu|npu-twin ...]  clones at the run's commit, results from the checkpoint
#   bash bench/learning/ctl.sh v5 resume  [cpu|npu-twin ...]  start (in the background) what is not running
#   bash bench/learning/ctl.sh v5 pause   [cpu|npu-twin ...]  stop cleanly (exit 130, state kept)
#   bash bench/learning/ctl.sh v5 status                      one line per domain
#   bash bench/learning/ctl.sh v5 checkpoint                  pack both into bench/results/ (commit it after)
#
# BENCH_ROOT (default /work/<design>) holds the clones; the repository this script is in holds the
# checkpoints and the environment (.venv, linked into each clone). Pause sends SIGTERM, which the
# benchmark takes as Ctrl-C (SIGINT is ignored by a background job's children). A run that stops with exit 1
# (a lost endpoint, a fatal LLM error) is started again, up to ten times; exit 0 or 130 ends it.
# BENCH_THREADS (default 1, the plan's one model thread) gives a half running alone both cores: a
# throughput setting, as v3's twin used (docs/learning_benchmark.md says where it was used).
# A design's `picks` are commits cherry-picked onto its commit in a new clone (fixes to the harness
# the benchmark must have; the docs say from when).
# (Until 2026-12-03 this was bench/learning/v4_ctl.sh, v4 only, with V4_ROOT and V4_THREADS.)
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
design="${1:-}"; shift || true
model=qwen2.5-coder-1.5b-instruct
case "$design" in
    v4) commit=78b97cb              # every v4 attempt ran here (docs: "v4 runs: where they stand")
        started=2026-11-28          # the checkpoints' date
        source_design=v3 ;;         # the folder whose screening it takes whole
    v5) commit=52454d8              # every v5 attempt runs here (docs: "v5 runs: where they stand")
        started=2026-12-03
        source_design=v4 ;;
    v6) commit=ce8b148              # every v6 attempt runs here (docs: "v6 runs: where they stand")
        picks="a7f138c a755813"     # on it: the worker and task loader import the clone's own harness (from 2026-12-07)
        started=2026-12-06
        source_design=v5 ;;
    *) sed -n 2,20p "$0"; exit 2 ;;
esac
root="${BENCH_ROOT:-/work/$design}"
threads="${BENCH_THREADS:-${V4_THREADS:-1}}"
results_of() { echo "$repo/bench/results/$started-$model-$design-$1-in-progress"; }
source_of() {  # the published run whose screening this design takes whole
    case "$source_design" in
        v3) echo "$repo/bench/results/2026-11-28-$model-v3-$1" ;;
        v4) echo "$repo/bench/results/2026-12-02-$model-v4-$1" ;;
        v5) echo "$repo/bench/results/2026-12-04-$model-v5-$1" ;;
    esac
}
source_dir() {  # where it is unpacked inside the clone
    if [ "$source_design" = v3 ] && [ "$1" = cpu ]; then echo runs/v3-cpu-wide; else echo "runs/$source_design-$1"; fi
}
flags_of() {
    local wide=""
    [ "$1" = cpu ] && wide="--wide-pool"
    echo "--design $design --backend $1 $wide --arms none,value --reuse-screening $(source_dir "$1")" \
         "--out runs/learning-$design-$1 --set local_llm.n_threads=$threads"
}

cmd="${1:-status}"; shift || true
domains=("$@")
if [ ${#domains[@]} -eq 0 ]; then  # by default the halves still running somewhere: a checkpoint or a clone
    for d in cpu npu-twin; do
        if [ -d "$(results_of "$d")" ] || [ -d "$root/$d/runs/learning-$design-$d" ]; then domains+=("$d"); fi
    done
fi

running_pid() {  # the supervising loop's pid, if it is alive
    local f="$root/$1/runs/$design.pid"
    [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f"
}

complete() {  # the run's own summary says every pass finished (then it is published, not checkpointed)
    python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["meta"]["complete"] else 1)' \
        "$root/$1/runs/learning-$design-$1/summary.json" 2>/dev/null
}

prepare() {
    local d="$1" clone="$root/$1"
    [ "$commit" != V5_COMMIT ] && [ "$commit" != V6_COMMIT ] || { echo "ctl: $design has not started: set its commit and date in $0 first" >&2; exit 1; }
    [ -x "$repo/.venv/bin/python" ] || { echo "ctl: no $repo/.venv (bash scripts/setup.sh dev,local-llm)" >&2; exit 1; }
    [ -d "$clone/runs/learning-$design-$d" ] || [ -d "$(results_of "$d")" ] || [ "${FIRST_START:-}" = 1 ] || {
        echo "ctl: $d has no checkpoint in bench/results/ (published?) and no results folder in $clone" \
             "(FIRST_START=1 starts a new one)" >&2; exit 1; }
    if [ ! -d "$clone/.git" ]; then
        git clone -q "$repo" "$clone" && git -C "$clone" checkout -q "$commit"
        for pick in ${picks:-}; do git -C "$clone" cherry-pick -x -X theirs "$pick" > /dev/null; done
    fi
    ln -sfn "$repo/.venv" "$clone/.venv"
    cd "$clone"
    [ -d "$(source_dir "$d")" ] || .venv/bin/python -m bench.learning unpack "$(source_of "$d")" --to "$(source_dir "$d")"
    if [ ! -d "runs/learning-$design-$d" ] && [ -d "$(results_of "$d")" ]; then
        .venv/bin/python -m bench.learning unpack "$(results_of "$d")" --to "runs/learning-$design-$d"
    fi
    [ -d "runs/learning-$design-$d" ] && .venv/bin/python -m bench.learning.progress "runs/learning-$design-$d" || true
}

resume() {
    local d="$1" clone="$root/$1"
    [ -d "$clone/runs/learning-$design-$d" ] || [ -d "$clone/$(source_dir "$d")" ] || prepare "$d"
    if pid=$(running_pid "$d"); then echo "ctl: $d already running (pid $pid)"; return; fi
    cd "$clone"
    # shellcheck disable=SC2046
    setsid bash -c '
        echo 19 > /proc/self/autogroup 2>/dev/null || true
        for try in 1 2 3 4 5 6 7 8 9 10; do
            echo "ctl: start $try at $(date -u +%FT%TZ)"
            nice -n 19 .venv/bin/python -m bench.learning '"$(flags_of "$d")"' & child=$!
            echo $child > runs/'"$design"'.child
            trap "kill -TERM $child 2>/dev/null" INT TERM
            wait $child; rc=$?
            while kill -0 $child 2>/dev/null; do wait $child; rc=$?; done
            echo "ctl: exit $rc at $(date -u +%FT%TZ)"
            [ "$rc" = 1 ] || break
            sleep 30
        done
        rm -f runs/'"$design"'.pid runs/'"$design"'.child' >> "runs/learning-$design-$d.log" 2>&1 < /dev/null &
    echo $! > "runs/$design.pid"
    echo "ctl: $d started (pid $!, log $clone/runs/learning-$design-$d.log)"
}

pause() {
    local d="$1" clone="$root/$1" pid
    pid=$(running_pid "$d") || { echo "ctl: $d is not running"; return; }
    echo "ctl: pausing $d"
    kill -TERM "$pid"
    for _ in $(seq 120); do kill -0 "$pid" 2>/dev/null || { echo "ctl: $d paused"; return; }; sleep 1; done
    echo "ctl: $d still stopping after 120 s (pid $pid)" >&2
}

case "$cmd" in
    prepare) for d in "${domains[@]}"; do prepare "$d"; done ;;
    resume) for d in "${domains[@]}"; do resume "$d"; done ;;
    pause) for d in "${domains[@]}"; do pause "$d"; done ;;
    status)
        for d in "${domains[@]}"; do
            state=paused; running_pid "$d" > /dev/null && state=running
            [ "$state" = paused ] && complete "$d" && state=complete
            printf '%s (%s): ' "$d" "$state"
            python3 "$repo/bench/learning/progress.py" "$root/$d/runs/learning-$design-$d" 2>&1 || true
        done ;;
    checkpoint)
        for d in "${domains[@]}"; do
            if complete "$d"; then echo "ctl: $d is complete: publish it, no checkpoint"; continue; fi
            "$repo/.venv/bin/python" -m bench.learning checkpoint "$root/$d/runs/learning-$design-$d" "$(results_of "$d")"
        done
        echo "git -C $repo add -A -- bench/results/*-$design-*-in-progress && git -C $repo commit -m 'learning benchmark $design: checkpoint at $(date -u +%H:%M)' -- bench/results/" ;;
    *) sed -n 2,20p "$0"; exit 2 ;;
esac
