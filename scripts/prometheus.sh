#!/bin/sh
# Start the distribution's Prometheus (Debian: apt-get install prometheus) on the scrape config
# Ray generates, so the campaign's ray_evokernel_* metrics (and Ray's own) are stored and graphed:
# http://127.0.0.1:9090 (Graph tab), and the default data source of the Ray dashboard and of
# Grafana. By default it uses the config Ray ships (ray/dashboard/modules/metrics/export/
# prometheus/prometheus.yml): it scrapes the nodes listed in /tmp/ray/prom_metrics_service_discovery.json,
# which every new Ray session rewrites, so one Prometheus follows run after run. A session's own
# copy (SESSION/metrics/prometheus/prometheus.yml) lists only that session's file: give
# RAY_SESSION_DIR to use it. Leave it running next to (or on) the head node; start `evokernel run`.
#
#   scripts/prometheus.sh                 # foreground; Ctrl-C stops it
#   PROMETHEUS_LISTEN=0.0.0.0:9090 PROMETHEUS_DATA=/var/tmp/prom scripts/prometheus.sh
set -eu

if ! command -v prometheus >/dev/null 2>&1; then
    echo "prometheus is not installed (Debian/Ubuntu: sudo apt-get install prometheus)" >&2
    exit 2
fi
if [ -n "${RAY_SESSION_DIR:-}" ]; then
    config=$RAY_SESSION_DIR/metrics/prometheus/prometheus.yml
else
    python=${PYTHON:-$(dirname "$0")/../.venv/bin/python}
    [ -x "$python" ] || python=python3
    config=$("$python" -c 'import os, ray.dashboard.modules.metrics as m; print(os.path.join(os.path.dirname(m.__file__), "export", "prometheus", "prometheus.yml"))')
fi
[ -f "$config" ] || { echo "no Prometheus config at $config" >&2; exit 2; }
data=${PROMETHEUS_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/evokernel/prometheus}
mkdir -p "$data"
listen=${PROMETHEUS_LISTEN:-127.0.0.1:9090}
echo "prometheus on http://$listen (config $config, data $data)" >&2
exec prometheus --config.file="$config" --storage.tsdb.path="$data" --web.listen-address="$listen" "$@"
