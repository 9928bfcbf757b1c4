#!/bin/sh
# Start the distribution's Prometheus (Debian: apt-get install prometheus) on the scrape config
# Ray writes for its session, so the campaign's ray_evokernel_* metrics (and Ray's own) are
# stored and graphed: http://127.0.0.1:9090 (Graph tab), and the Ray dashboard's and Grafana's
# default data source. Ray's config scrapes every node listed in
# /tmp/ray/prom_metrics_service_discovery.json, which each new session rewrites: one Prometheus
# keeps working across runs. Without a running session, Ray's packaged copy of the same config is
# used. Run it next to the head node (or on it), leave it running, start `evokernel run`.
#
#   scripts/prometheus.sh                 # foreground; Ctrl-C stops it
#   PROMETHEUS_LISTEN=0.0.0.0:9090 PROMETHEUS_DATA=/var/tmp/prom scripts/prometheus.sh
set -eu

if ! command -v prometheus >/dev/null 2>&1; then
    echo "prometheus is not installed (Debian/Ubuntu: sudo apt-get install prometheus)" >&2
    exit 2
fi
session=${RAY_SESSION_DIR:-/tmp/ray/session_latest}
config=$session/metrics/prometheus/prometheus.yml
if [ ! -f "$config" ]; then
    python=${PYTHON:-$(dirname "$0")/../.venv/bin/python}
    [ -x "$python" ] || python=python3
    config=$("$python" -c 'import os, ray.dashboard.modules.metrics as m; print(os.path.join(os.path.dirname(m.__file__), "export", "prometheus", "prometheus.yml"))')
    echo "no Ray session at $session yet: using Ray's packaged config $config" >&2
fi
data=${PROMETHEUS_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/evokernel/prometheus}
mkdir -p "$data"
listen=${PROMETHEUS_LISTEN:-127.0.0.1:9090}
echo "prometheus on http://$listen (config $config, data $data)" >&2
exec prometheus --config.file="$config" --storage.tsdb.path="$data" --web.listen-address="$listen" "$@"
