#!/bin/sh
# Ends what is left of a worker's Ray session once its raylet is gone (the cluster files start it on
# each worker just before `ray start`; docs/scale_out.md). `ray down` stops the head only; a
# worker's raylet then exits by itself, but Ray's log monitor stayed. Started before `ray start`, so
# that a start cut short (the head gone meanwhile) leaves nothing behind either.
#
#   sh ray_session_watch.sh [START_S]   # how long to wait for a raylet to appear (300 s)
#
# RAY_SESSION_WATCH_POLL_S (default 5) is how often it looks; the test sets 1 to run in seconds.
start_s=${1:-300}
poll=${RAY_SESSION_WATCH_POLL_S:-5}
waited=0
until raylet=$(pgrep -xn raylet); do  # `ray start` brings it up (or never does); `ray stop` ran before
    [ "$waited" -ge "$start_s" ] && break
    sleep "$poll"
    waited=$((waited + poll))
done
while [ -n "$raylet" ] && kill -0 "$raylet" 2>/dev/null; do sleep "$poll"; done
session=$(readlink -f /tmp/ray/session_latest) || exit 0
[ -n "$session" ] && pkill -f "$session/"
exit 0
