"""The campaign's Grafana dashboard, tested the ways it can fail without Grafana installed.

By default: the shipped JSON is what launch.dashboards renders, every panel queries metrics the
code really registers (with the suffix Prometheus gives their type), the dashboard lands in a
session's Grafana folder after Ray's own files, and the dashboard's address comes with how to
sign in (never the token). Slow: the distribution's Prometheus scrapes a real campaign on a local
Ray cluster, and every panel's query, run as Grafana runs it (a range query), returns series.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from launch.dashboards import (
    DASHBOARD_FILE,
    INSTALLED_NAME,
    dashboard_json,
    grafana_dashboard,
    install_grafana_dashboard,
    panel_queries,
)
from launch.ray_campaign.ray_session import announce_dashboard
from tests.launch.local_ports import free_port

ROOT = Path(__file__).resolve().parents[2]
REGISTERING = [ROOT / "launch" / "metrics.py", ROOT / "npu_pool" / "pools.py", ROOT / "memory_actor" / "actor.py"]
SUFFIXES = {"Counter": ("_total",), "Gauge": ("",), "Histogram": ("_bucket", "_sum", "_count")}


def registered_metrics() -> dict[str, str]:
    """{evokernel_* name: Counter|Gauge|Histogram} as the code registers them."""
    found: dict[str, str] = {}
    for path in REGISTERING:
        for kind, name in re.findall(r"metrics\.(Counter|Gauge|Histogram)\(\s*\"(evokernel_\w+)\"", path.read_text()):
            found[name] = kind
    return found


def test_the_shipped_dashboard_is_the_rendered_one():
    assert DASHBOARD_FILE.read_text() == dashboard_json()
    dashboard = grafana_dashboard()
    titles = {panel["title"] for panel in dashboard["panels"]}
    assert {"Operators by state", "Attempts by gate", "Best speedup over eager", "LLM tokens",
            "Device pool utilisation", "Memory retrieval latency", "Memory retrievals and value updates"} <= titles
    assert {v["name"] for v in dashboard["templating"]["list"]} == {"datasource", "run"}


def test_every_panel_queries_metrics_the_code_registers():
    registered = registered_metrics()
    assert len(registered) >= 15
    for title, expr in panel_queries():
        names = re.findall(r"\bray_(evokernel_\w+)", expr)
        assert names, (title, expr)
        for exported in names:
            matches = [name for name, kind in registered.items()
                       for suffix in SUFFIXES[kind] if exported == name + suffix]
            assert matches, f"{title}: {exported} is not a registered metric (with its type's suffix)"


def test_the_dashboard_goes_into_the_sessions_grafana_folder_after_rays_files(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_METRICS_GRAFANA_DASHBOARD_OUTPUT_DIR", raising=False)
    folder = tmp_path / "metrics" / "grafana" / "dashboards"
    thread = install_grafana_dashboard(tmp_path, wait_s=10)
    time.sleep(0.7)
    assert not (folder / INSTALLED_NAME).exists()  # Ray's dashboard empties the folder when it starts
    folder.mkdir(parents=True)
    (folder / "default_grafana_dashboard.json").write_text("{}")
    thread.join(timeout=5)
    assert json.loads((folder / INSTALLED_NAME).read_text())["uid"] == "evokernel-campaign"


def test_the_dashboard_address_comes_with_how_to_sign_in(tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    out = io.StringIO()
    announce_dashboard("127.0.0.1:8265", local=True, stream=out)
    text = out.getvalue()
    assert "Ray dashboard: http://127.0.0.1:8265" in text and "ray get-auth-token" in text
    assert "scripts/prometheus.sh" in text and "report.html" in text
    token = Path.home() / ".ray" / "auth_token"
    if token.is_file() and token.read_text().strip():
        assert token.read_text().strip() not in text


# -- against a real Prometheus (slow) -------------------------------------------------------


def _query_range(base: str, expr: str, start: float, end: float) -> list:
    params = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": "2"})
    with urllib.request.urlopen(f"{base}/api/v1/query_range?{params}", timeout=30) as reply:
        body = json.load(reply)
    assert body["status"] == "success", body
    return body["data"]["result"]


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.skipif(shutil.which("prometheus") is None, reason="the distribution's prometheus is not installed")
def test_every_panel_query_returns_series_from_a_real_campaign(tmp_path):
    import ray

    from launch.ray_campaign.concurrent_campaign import ConcurrentCampaign
    from npu_pool.devices import FakeDevices
    from tests.actors.openai_server import OpenAITestServer
    from tests.launch.kernel_agent import SUITE_TASKS, ElementwiseAgent
    from tests.launch.ray_campaign.test_concurrent_campaign import SUITE, settings_for

    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=2, resources={"NPU": 2}, log_to_driver=False,
             namespace="evokernel-dashboard-test")
    prometheus = None
    try:
        targets = [f"127.0.0.1:{node['MetricsExportPort']}" for node in ray.nodes() if node.get("MetricsExportPort")]
        assert targets, "the node exports no metrics (ray[default] missing?)"
        config = tmp_path / "prometheus.yml"
        # Ray's generated config with a 1 s interval and this cluster's node only (another
        # engineer's session may own the shared service-discovery file).
        config.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"
                          f"- job_name: ray\n  static_configs:\n  - targets: {json.dumps(targets)}\n")
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        prometheus = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                                       f"--web.listen-address=127.0.0.1:{port}"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        start = time.time()
        with OpenAITestServer() as server:
            server.responder = ElementwiseAgent(delay_s=1.0)
            settings = settings_for(server.base_url, server.model, tmp_path, iterations=3)
            campaign = ConcurrentCampaign(settings, tmp_path / "run", fake=FakeDevices(kind="npu", count=2))
            summary = campaign.run([SUITE / f"{task}.py" for task in SUITE_TASKS[:2]])
            assert summary["totals"]["feasible"] == 2
        time.sleep(4)  # the last samples are scraped
        end = time.time()
        empty = []
        for title, expr in panel_queries():
            if not _query_range(base, expr.replace("$run", ".+"), start, end):
                empty.append(f"{title}: {expr}")
        assert not empty, "panels whose query returned no series:\n" + "\n".join(empty)
    finally:
        if prometheus is not None:
            prometheus.terminate()
            prometheus.wait(timeout=30)
        ray.shutdown()
