#!/usr/bin/env bash
# Runs the time-budget benchmark (bench/budget.py, issue 67) in a frozen clone, in the background.
#
#   bash bench/budget_ctl.sh prepare COMMIT [PICK ...]
#                                             a clone at COMMIT (BENCH_ROOT, default /work/budget-bench), with the commits
#                                             PICK cherry-picked on it (the budget's own later fixes), .venv linked, the
#                                             checkpoint under bench/results/ unpacked into it if there is one
#     (the run since 2026-12-07: docs/agent.md "The budget benchmark" names its commit and its picks)
#   bash bench/budget_ctl.sh resume [--stop-before ROW]
#                                             probe the machine's speed at the model (bench/budget_probe.py, a
#                                             minute), then start (nice -n 10, in the background) what is not finished; with
#                                             --stop-before budget, end when the full row has (the budget row's hours
#                                             are wall time: start it in a session that can hold them)
#   bash bench/budget_ctl.sh pause [--after-operator]
#                                             stop cleanly (the row's run exits 130, its state kept); with
#                                             --after-operator, first wait (up to WAIT_S, default 1800 s) for the
#                                             running operator to end, so a resume redoes nothing (end of a session)
#   bash bench/budget_ctl.sh probe            the machine's speed at the model, paused (resume runs it first; at
#                                             a session's end: pause --after-operator, probe, checkpoint)
#   bash bench/budget_ctl.sh status           one line per row
#   bash bench/budget_ctl.sh checkpoint       pause, pack into bench/results/<date>-...-budget-in-progress, resume
#   bash bench/budget_ctl.sh publish          pack the finished rows with their table into bench/results/
#
# Pause sends SIGTERM to the driver, which hands it to the row's `evokernel run` (a clean stop; the next
# resume continues with `evokernel run --resume`). Commit a checkpoint after making it:
#   git add bench/results/*-budget-in-progress && git commit -m '...' -- bench/results/
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
root="${BENCH_ROOT:-/work/budget-bench}"
clone="$root/clone"
out="$clone/runs/budget-bench"
model=qwen2.5-coder-1.5b-instruct
results_glob="$repo/bench/results/*-$model-budget-in-progress"
cmd="${1:-status}"; shift || true

running_pid() {
    local f="$root/bench.pid"
    [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && cat "$f"
}

wait_operator_end() {  # until one more operator has ended, or WAIT_S seconds (default 1800) have passed
    ended() { cat "$out"/*/summary.json 2>/dev/null | grep -c '"stopped_by"' || true; }
    local before waited=0
    before=$(ended)
    # more than before: a resume that has just started rewrites summary.json without the operator it reruns
    while [ "$(ended)" -le "$before" ] && [ "$waited" -lt "${WAIT_S:-1800}" ]; do
        [ "$(ended)" -lt "$before" ] && before=$(ended)
        sleep 5; waited=$((waited + 5))
    done
    [ "$(ended)" -gt "$before" ] || echo "ctl: no operator ended within ${WAIT_S:-1800} s; pausing mid-operator" >&2
}

checkpoint_dir() {  # the existing checkpoint, else one named for today
    local found
    found=$(ls -d $results_glob 2>/dev/null | tail -1 || true)
    echo "${found:-$repo/bench/results/$(date -u +%F)-$model-budget-in-progress}"
}

case "$cmd" in
    prepare)
        commit="${1:?usage: budget_ctl.sh prepare COMMIT [PICK ...]}"; shift
        mkdir -p "$root"
        if [ ! -d "$clone/.git" ]; then
            git clone -q "$repo" "$clone"
        fi
        git -C "$clone" fetch -q origin
        git -C "$clone" checkout -q --detach "$commit"
        for pick in "$@"; do git -C "$clone" cherry-pick -X theirs "$pick" > /dev/null; done
        ln -sfn "$repo/.venv" "$clone/.venv"
        ckpt=$(ls -d $results_glob 2>/dev/null | tail -1 || true)
        if [ ! -d "$out" ] && [ -n "$ckpt" ]; then
            "$repo/.venv/bin/python" -m bench.learning unpack "$ckpt" --to "$out"
        fi
        echo "ctl: clone at $(git -C "$clone" rev-parse --short HEAD) in $clone" ;;
    resume)
        if pid=$(running_pid); then echo "ctl: already running (pid $pid)"; exit 0; fi
        [ -d "$clone/.git" ] || { echo "ctl: no clone: bash bench/budget_ctl.sh prepare COMMIT" >&2; exit 1; }
        mkdir -p "$out"
        # the machine's speed at the model, with nothing else running (rows' sessions may land on different machines)
        bash "$0" probe || echo "ctl: the speed probe failed (see above); going on without it" >&2
        cd "$clone"
        setsid nohup nice -n 10 .venv/bin/python -m bench.budget run --out "$out" "$@" >> "$out/bench.log" 2>&1 < /dev/null &
        echo $! > "$root/bench.pid"
        echo "ctl: started (pid $!, log $out/bench.log)" ;;
    pause)
        pid=$(running_pid) || { echo "ctl: not running"; exit 0; }
        if [ "${1:-}" = --after-operator ]; then
            echo "ctl: pausing when the running operator ends (up to ${WAIT_S:-1800} s)"
            wait_operator_end
            pid=$(running_pid) || { echo "ctl: not running (the run ended)"; exit 0; }
        fi
        kill -TERM "$pid"
        for _ in $(seq 180); do kill -0 "$pid" 2>/dev/null || { echo "ctl: paused"; exit 0; }; sleep 1; done
        echo "ctl: still stopping after 180 s (pid $pid)" >&2; exit 1 ;;
    probe)
        if pid=$(running_pid); then echo "ctl: running (pid $pid): pause it first, the probe needs the machine alone" >&2; exit 1; fi
        mkdir -p "$out"
        (cd "$repo" && nice -n 10 .venv/bin/python -m bench.budget_probe --out "$out") ;;
    status)
        state=paused; running_pid > /dev/null && state=running
        echo "ctl: $state"
        [ -d "$out" ] && (cd "$repo" && .venv/bin/python -m bench.budget status --out "$out") || true
        if [ "$state" = running ]; then  # the running row's own progress line: its estimated end
            log=$(ls -t "$out"/full.log "$out"/budget.log "$out"/stops.log 2>/dev/null | head -1 || true)
            [ -n "$log" ] && grep '"status"' "$log" | tail -1 | "$repo/.venv/bin/python" -c \
                'import json, sys; [print("now:", json.loads(line)["status"]) for line in sys.stdin]' || true
        fi ;;
    checkpoint)
        was_running=0; running_pid > /dev/null && was_running=1
        if [ "$was_running" = 1 ]; then  # pause as an operator ends: little is redone
            bash "$0" pause --after-operator
        fi
        # the bookkeeping (packing, tables) is this checkout's; only the rows' runs are the frozen clone's
        (cd "$repo" && .venv/bin/python -m bench.budget checkpoint "$out" "$(checkpoint_dir)")
        [ "$was_running" = 1 ] && bash "$0" resume
        echo "git -C $repo add bench/results/ && git -C $repo commit -m 'budget benchmark: checkpoint' -- bench/results/" ;;
    publish)
        (cd "$repo" && .venv/bin/python -m bench.budget publish "$out" "$repo/bench/results/$(date -u +%F)-$model-budget") ;;
    *) sed -n 2,26p "$0"; exit 2 ;;
esac
