"""The Grafana dashboard of a campaign's `ray_evokernel_*` metrics, and where Ray's Grafana finds it.

`PANELS` is the dashboard (title, unit, PromQL queries); `grafana_dashboard()` renders it as
Grafana JSON, the same as the shipped evokernel_grafana_dashboard.json (a test keeps the two
equal). Ray's dashboard writes a Grafana provisioning folder for every session
(SESSION/metrics/grafana: grafana.ini, provisioning/, dashboards/) and a Grafana started with
that grafana.ini loads every JSON file in dashboards/ into its "Ray" folder:
`install_grafana_dashboard` adds ours there once Ray has written its own (it empties the folder
when its dashboard starts). The queries carry a `$run` variable (the run id tag) and the
`$datasource` variable Ray's dashboards use.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from launch.atomic_file import write_atomically

DASHBOARD_FILE = Path(__file__).resolve().parent / "evokernel_grafana_dashboard.json"
DASHBOARD_UID = "evokernel-campaign"
INSTALLED_NAME = "evokernel_grafana_dashboard.json"
RUN = 'run=~"$run"'

# (title, unit, description, [(PromQL, legend)])
PANELS: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    ("Operators by state", "short", "planned, running, done, feasible (a feasible kernel found), failed (an error)",
     [(f"max by (state) (ray_evokernel_operators{{{RUN}}})", "{{state}}")]),
    ("Attempts by gate", "short", "attempts so far by the gate their verdict stopped at (ok: feasible)",
     [(f"sum by (gate) (ray_evokernel_attempts_total{{{RUN}}})", "{{gate}}")]),
    ("Best speedup over eager", "x", "max and median over feasible operators of their best kernel's speedup",
     [(f"max by (stat) (ray_evokernel_best_speedup{{{RUN}}})", "{{stat}}")]),
    ("LLM tokens", "short", "prompt and completion tokens spent so far, and LLM requests that failed",
     [(f"sum by (kind) (ray_evokernel_llm_tokens_total{{{RUN}}})", "{{kind}}"),
      # a counter has no series until its first increment: a healthy run shows 0, not "No data"
      (f"sum(ray_evokernel_llm_errors_total{{{RUN}}}) or vector(0)", "failed requests")]),
    ("Episodes in flight", "short", "operators whose episode runs now",
     [(f"max(ray_evokernel_episodes_in_flight{{{RUN}}})", "episodes")]),
    ("Device pool utilisation", "short", "devices busy (device-seconds of evaluation per second), idle devices, "
     "candidates waiting for a device",
     [("sum(rate(ray_evokernel_pool_eval_seconds_sum[1m]))", "busy devices"),
      ("sum(ray_evokernel_pool_idle_devices)", "idle devices"),
      ("sum(ray_evokernel_pool_waiting_candidates)", "waiting candidates")]),
    ("Evaluations by gate", "short", "candidates the device pool evaluated, by verdict gate",
     [("sum by (gate) (ray_evokernel_pool_evaluations_total)", "{{gate}}")]),
    ("Memory retrieval latency", "ms", "median and 95th percentile of a retrieval in the memory actor",
     [("histogram_quantile(0.5, sum by (le) (rate(ray_evokernel_memory_retrieve_ms_bucket[2m])))", "p50"),
      ("histogram_quantile(0.95, sum by (le) (rate(ray_evokernel_memory_retrieve_ms_bucket[2m])))", "p95")]),
    ("Memory retrievals and value updates", "short", "retrievals served and value updates applied, by stage",
     [("sum by (stage) (ray_evokernel_memory_retrievals_total)", "retrievals {{stage}}"),
      ("sum by (stage) (ray_evokernel_memory_updates_total)", "updates {{stage}}")]),
    ("Memory items", "short", "items in the bank by kind",
     [("max by (kind) (ray_evokernel_memory_items)", "{{kind}}")]),
]


def _panel(index: int, title: str, unit: str, description: str, queries: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "id": index + 1, "type": "timeseries", "title": title, "description": description,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": 8 * (index // 2)},
        "fieldConfig": {"defaults": {"unit": unit, "min": 0, "custom": {"lineWidth": 2, "fillOpacity": 10}},
                        "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                    "tooltip": {"mode": "multi", "sort": "none"}},
        "targets": [{"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend,
                     "datasource": {"type": "prometheus", "uid": "${datasource}"}}
                    for i, (expr, legend) in enumerate(queries)],
    }


def grafana_dashboard() -> dict[str, Any]:
    """The dashboard as Grafana JSON (schema 39: Grafana 10 and later)."""
    return {
        "uid": DASHBOARD_UID, "title": "EvoKernel campaign", "tags": ["evokernel"], "editable": True,
        "schemaVersion": 39, "version": 1, "refresh": "10s", "time": {"from": "now-1h", "to": "now"},
        "timezone": "", "graphTooltip": 1, "links": [], "annotations": {"list": []},
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
             "current": {}, "hide": 0, "refresh": 1},
            {"name": "run", "label": "Run", "type": "query", "datasource": {"type": "prometheus", "uid": "${datasource}"},
             "query": {"query": "label_values(ray_evokernel_operators, run)", "refId": "run"},
             "definition": "label_values(ray_evokernel_operators, run)", "refresh": 2, "includeAll": True,
             "multi": True, "allValue": ".+", "current": {"text": "All", "value": "$__all"}, "sort": 2},
        ]},
        "panels": [_panel(i, *panel) for i, panel in enumerate(PANELS)],
    }


def panel_queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) of every query of the dashboard."""
    return [(title, expr) for title, _, _, queries in PANELS for expr, _ in queries]


def grafana_dashboards_dir(session_dir: str | Path) -> Path:
    """Where the Ray dashboard of a session keeps its Grafana dashboards (Ray's own override first)."""
    override = os.environ.get("RAY_METRICS_GRAFANA_DASHBOARD_OUTPUT_DIR")
    return Path(override) if override else Path(session_dir) / "metrics" / "grafana" / "dashboards"


def install_grafana_dashboard(session_dir: str | Path, wait_s: float = 30.0) -> threading.Thread:
    """Copy the dashboard into the session's Grafana dashboards folder, in the background, once
    Ray's dashboard has written its own files there (it clears the folder first)."""
    target = grafana_dashboards_dir(session_dir)

    def copy_when_ready() -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if (target / "default_grafana_dashboard.json").is_file():
                write_atomically(target / INSTALLED_NAME, DASHBOARD_FILE.read_text(encoding="utf-8"))
                return
            time.sleep(0.5)

    thread = threading.Thread(target=copy_when_ready, name="evokernel-grafana-dashboard", daemon=True)
    thread.start()
    return thread


def dashboard_json() -> str:
    """The shipped file's text. After changing PANELS: `python -c "from launch.dashboards import
    write_dashboard_file; write_dashboard_file()"`."""
    return json.dumps(grafana_dashboard(), indent=2) + "\n"


def write_dashboard_file() -> None:
    DASHBOARD_FILE.write_text(dashboard_json(), encoding="utf-8")
