#!/usr/bin/env bash
# Runs the learning benchmark v4 in its frozen clones (docs/learning_benchmark.md, "v4: running it").
#
#   bash bench/learning/v4_ctl.sh prepare [cpu|npu-twin ...]  clones at the run's commit, results from the checkpoint
#   bash bench/learning/v4_ctl.sh resume  [cpu|npu-twin ...]  start (in the background) what is not running
#   bash bench/learning/v4_ctl.sh pause   [cpu|npu-twin ...]  stop cleanly (exit 130, state kept)
#   bash bench/learning/v4_ctl.sh status                      one line per domain
#   bash bench/learning/v4_ctl.sh checkpoint                  pack both into bench/results/ (commit it after)
#
# V4_ROOT (default /work/v4) holds the clones; the repository this script is in holds the
# checkpoints and the environment (.venv, linked into each clone). Pause sends SIGTERM, which the
# benchmark takes as Ctrl-C (SIGINT is ignored by a background job's children). A run that stops with exit 1
# (a lost endpoint, a fatal LLM error) is started again, up to ten times; exit 0 or 130 ends it.
# V4_THREADS (default 1, the plan's one model thread) gives a half running alone both cores: a
# throughput setting, as v3's twin used (docs/learning_benchmark.md says where it was used).
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
root="${V4_ROOT:-/work/v4}"
commit=78b97cb                    # every v4 attempt runs here (docs: "v4 runs: where they stand")
results_of() { echo "$repo/bench/results/2026-11-28-qwen2.5-coder-1.5b-instruct-v4-$1-in-progress"; }
v3_of() { echo "$repo/bench/results/2026-11-28-qwen2.5-coder-1.5b-instruct-v3-$1"; }
v3_dir() { [ "$1" = cpu ] && echo runs/v3-cpu-wide || echo runs/v3-npu-twin; }
flags_of() {
    local wide=""
    [ "$1" = cpu ] && wide="--wide-pool"
    echo "--design v4 --backend $1 $wide --arms none,value --reuse-screening $(v3_dir "$1")" \
         "--out runs/learning-v4-$1 --set local_llm.n_threads=${V4_THREADS:-1}"
}

cmd="${1:-status}"; shift || true
domains=("$@")
if [ ${#domains[@]} -eq 0 ]; then  # by default the halves still running somewhere: a checkpoint or a clone
    for d in cpu npu-twin; do
        if [ -d "$(results_of "$d")" ] || [ -d "$root/$d/runs/learning-v4-$d" ]; then domains+=("$d"); fi
    done
fi

running_pid() {  # the supervising loop's pid, if it is alive
    local f="$root/$1/runs/v4.pid"
    [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f"
}

complete() {  # the run's own summary says every pass finished (then it is published, not checkpointed)
    python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["meta"]["complete"] else 1)' \
        "$root/$1/runs/learning-v4-$1/summary.json" 2>/dev/null
}

prepare() {
    local d="$1" clone="$root/$1"
    [ -x "$repo/.venv/bin/python" ] || { echo "v4_ctl: no $repo/.venv (bash scripts/setup.sh dev,local-llm)" >&2; exit 1; }
    [ -d "$clone/runs/learning-v4-$d" ] || [ -d "$(results_of "$d")" ] || {
        echo "v4_ctl: $d has no checkpoint in bench/results/ (published?) and no results folder in $clone" >&2; exit 1; }
    if [ ! -d "$clone/.git" ]; then
        git clone -q "$repo" "$clone" && git -C "$clone" checkout -q "$commit"
    fi
    ln -sfn "$repo/.venv" "$clone/.venv"
    cd "$clone"
    [ -d "$(v3_dir "$d")" ] || .venv/bin/python -m bench.learning unpack "$(v3_of "$d")" --to "$(v3_dir "$d")"
    [ -d "runs/learning-v4-$d" ] || .venv/bin/python -m bench.learning unpack "$(results_of "$d")" --to "runs/learning-v4-$d"
    .venv/bin/python -m bench.learning.progress "runs/learning-v4-$d"
}

resume() {
    local d="$1" clone="$root/$1"
    [ -d "$clone/runs/learning-v4-$d" ] || prepare "$d"
    if pid=$(running_pid "$d"); then echo "v4_ctl: $d already running (pid $pid)"; return; fi
    cd "$clone"
    # shellcheck disable=SC2046
    setsid bash -c '
        echo 19 > /proc/self/autogroup 2>/dev/null || true
        for try in 1 2 3 4 5 6 7 8 9 10; do
            echo "v4_ctl: start $try at $(date -u +%FT%TZ)"
            nice -n 19 .venv/bin/python -m bench.learning '"$(flags_of "$d")"' & child=$!
            echo $child > runs/v4.child
            trap "kill -TERM $child 2>/dev/null" INT TERM
            wait $child; rc=$?
            while kill -0 $child 2>/dev/null; do wait $child; rc=$?; done
            echo "v4_ctl: exit $rc at $(date -u +%FT%TZ)"
            [ "$rc" = 1 ] || break
            sleep 30
        done
        rm -f runs/v4.pid runs/v4.child' >> "runs/learning-v4-$d.log" 2>&1 < /dev/null &
    echo $! > runs/v4.pid
    echo "v4_ctl: $d started (pid $!, log $clone/runs/learning-v4-$d.log)"
}

pause() {
    local d="$1" clone="$root/$1" pid
    pid=$(running_pid "$d") || { echo "v4_ctl: $d is not running"; return; }
    echo "v4_ctl: pausing $d"
    kill -TERM "$pid"
    for _ in $(seq 120); do kill -0 "$pid" 2>/dev/null || { echo "v4_ctl: $d paused"; return; }; sleep 1; done
    echo "v4_ctl: $d still stopping after 120 s (pid $pid)" >&2
}

case "$cmd" in
    prepare) for d in "${domains[@]}"; do prepare "$d"; done ;;
    resume) for d in "${domains[@]}"; do resume "$d"; done ;;
    pause) for d in "${domains[@]}"; do pause "$d"; done ;;
    status)
        for d in "${domains[@]}"; do
            state=paused; running_pid "$d" > /dev/null && state=running
            printf '%s (%s): ' "$d" "$state"
            python3 "$repo/bench/learning/progress.py" "$root/$d/runs/learning-v4-$d" 2>&1 || true
        done ;;
    checkpoint)
        for d in "${domains[@]}"; do
            if complete "$d"; then echo "v4_ctl: $d is complete: publish it, no checkpoint"; continue; fi
            "$repo/.venv/bin/python" -m bench.learning checkpoint "$root/$d/runs/learning-v4-$d" "$(results_of "$d")"
        done
        echo "git -C $repo add -A -- bench/results/*-v4-*-in-progress && git -C $repo commit -m 'learning benchmark v4: checkpoint at $(date -u +%H:%M)' -- bench/results/" ;;
    *) sed -n 2,16p "$0"; exit 2 ;;
esac
