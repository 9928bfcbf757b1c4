"""Write a report: summary.json (figures per run), PNG plots and one self-contained report.html."""

from __future__ import annotations

import base64
import json
import threading
import time
from datetime import UTC, datetime
from html import escape
from pathlib import Path

import structlog
from pydantic import BaseModel

from launch.kernel_index import KernelEntry
from launch.report import Distribution, RunReport, analyse_run, label_runs
from launch.report_plots import write_plots
from npu_pool.backends import latency_unit

log = structlog.get_logger("evokernel.report")


class ReportFiles(BaseModel):
    summary: Path
    html: Path
    plots: dict[str, Path]


def write_report(run_dirs: list[Path], out_dir: Path, refresh_s: int | None = None,
                 log_problems: bool = True) -> tuple[list[RunReport], ReportFiles]:
    """Analyse the run folders and write summary.json, the plots and report.html into out_dir;
    `refresh_s`: the page reloads itself that often (a live report of a running campaign)."""
    reports = [analyse_run(run_dir) for run_dir in run_dirs]
    label_runs(reports)
    out_dir.mkdir(parents=True, exist_ok=True)
    for report in reports if log_problems else []:
        for problem in report.problems:
            log.warning("run problem", run=report.label, problem=problem)
    plots = write_plots(reports, out_dir)
    generated_at = datetime.now(UTC).isoformat(timespec="seconds")
    summary = {
        "generated_at": generated_at,
        "figures": {name: path.name for name, path in plots.items()},
        "runs": [report.model_dump(mode="json") for report in reports],
    }
    summary_path = out_dir / "summary.json"
    summary_path.write_text(json.dumps(summary, indent=2) + "\n")
    html_path = out_dir / "report.html"
    html_path.write_text(render_html(reports, plots, generated_at, refresh_s))
    return reports, ReportFiles(summary=summary_path, html=html_path, plots=plots)


def _fmt(value: float | None, pattern: str = "{:.2f}") -> str:
    return "—" if value is None else pattern.format(value)


def _dist(stats: Distribution) -> str:
    if not stats.n:
        return "—"
    return f"{stats.median:.2f}x (IQR {stats.q25:.2f}–{stats.q75:.2f}, n={stats.n})"


def _final(values: list[float]) -> str:
    return f"{values[-1]:.0%}" if values else "—"


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _comparison(reports: list[RunReport]) -> str:
    rows = [[escape(r.label), escape(r.run_dir), escape(str(r.retrieval or "?")), escape(str(r.model or "?")),
             str(len(r.operators)), str(r.attempts), _final(r.curves.fast_0), _final(r.curves.fast_1),
             _dist(r.speedup_best_over_first), _dist(r.speedup_vs_eager), f"{r.tokens:,}"] for r in reports]
    return _table(["run", "folder", "retrieval", "model", "operators", "attempts", "fast_0 (final)",
                   "fast_1 (final)", "best / first draft", "best / eager", "tokens"], rows)


def _operators(report: RunReport) -> str:
    rows = []
    for op in report.operators:
        failures = ", ".join(f"{escape(gate)}: {n}" for gate, n in op.failures.items()) or "—"
        note = op.error or ("" if op.feasible else op.last_reason)
        rows.append([escape(op.task), str(op.attempts), "yes" if op.feasible else "<b>no</b>",
                     _fmt(op.first_feasible_iteration, "{}"), _fmt(op.first_feasible_latency_ms, "{:.4g}"),
                     _fmt(op.best_latency_ms, "{:.4g}"), _fmt(op.speedup_best_over_first, "{:.2f}x"),
                     _fmt(op.speedup_vs_eager, "{:.2f}x"), f"{op.tokens:,}", failures,
                     f"<span class=reason>{escape(note[:300])}</span>"])
    if not rows:
        return "<p>No operators.</p>"
    unit = latency_unit(report.timing, heading=True)
    return _table(["operator", "attempts", "feasible", "first feasible at", f"first latency ({unit})",
                   f"best latency ({unit})", "best / first", "best / eager", "tokens", "failed gates",
                   "last failure / error"], rows)


def _kernels(report: RunReport) -> str:
    """The kernels the run kept (RUN_DIR/kernels/), linked relative to the run folder."""
    if not report.kernels:
        return "<p>No kernels kept (no feasible kernel, or a run from before runs kept them).</p>"
    rows = []
    for k in report.kernels:
        sizes = ", ".join(f"{name}={value}" for name, value in k.sizes.items()) or "—"
        files = f"<code>kernels/{escape(k.source)}</code>"
        if k.modelnew and k.modelnew != k.source:
            files += f"<br><code>kernels/{escape(k.modelnew)}</code>"
        elif not k.modelnew:
            files += f"<br><span class=reason>no ModelNew: {escape(k.modelnew_note or '?')}</span>"
        if k.kernel == "first" and Path(k.source).name.startswith("best"):  # kept once (docs/contracts.md)
            files += "<br><span class=reason>the best's files: the first kernel is also the best</span>"
        rows.append([escape(k.task), k.kernel, _fmt(k.latency_ms, "{:.4g}"), _fmt(k.speedup_vs_eager, "{:.2f}x"),
                     str(k.iteration), f"<code>{escape((k.attempt_id or '—')[:12])}</code>", escape(k.backend),
                     escape(k.candidate_format), escape(sizes), files])
    return _table(["operator", "kernel", f"latency ({latency_unit(report.timing, heading=True)})", "vs eager", "iteration", "attempt", "backend", "format",
                   "verified at", "files"], rows)


def _climb(report: RunReport) -> str:
    """The climb (issue 65): for each operator whose kernels carry the twin's modelled profile, its
    first and best kernels side by side, stage by stage (time summed over the blocks), with the
    cores used and the double buffering; empty where no kernel has one (measured timing)."""
    by_task: dict[str, dict[str, KernelEntry]] = {}
    for k in report.kernels:
        if k.stages is not None:
            by_task.setdefault(k.task, {})[k.kernel] = k
    if not by_task:
        return ""
    rows = []
    for task, kept in sorted(by_task.items()):
        first, best = kept.get("first"), kept.get("best")
        same = first is not None and best is not None and first.attempt_id == best.attempt_id
        for which, k in (("first", first), ("best", None if same else best)):
            if k is None:
                continue
            st = k.stages
            used = min(st.blocks, st.vector_cores) if st.vector_cores else st.blocks
            rows.append([escape(task), which + (" (= best)" if same else ""), _fmt(st.modelled_us, "{:.4g}"),
                         _fmt(st.scalar_us, "{:.4g}"), _fmt(st.copy_in_us + st.copy_out_us, "{:.4g}"),
                         _fmt(st.vector_us, "{:.4g}"), escape(st.dominant()), f"{st.blocks} on {used} of {st.vector_cores}",
                         f"{st.double_buffered_blocks} of {st.blocks}", _fmt(k.speedup_vs_eager, "{:.3g}x"),
                         _fmt(first.latency_ms / k.latency_ms if first and first.latency_ms and k.latency_ms else None,
                              "{:.3g}x")])
    return ("<p>Each operator's first and best kernel as the Ascend C twin models them (microseconds per stage, "
            "summed over the blocks; modelled, not measured on an NPU).</p>"
            + _table(["operator", "kernel", "modelled us", "scalar us", "copy us", "vector us", "dominates",
                      "blocks on vector cores", "double buffered", "vs eager", "vs first"], rows))


def _modelled_note(reports: list[RunReport]) -> str:
    modelled = [r.label for r in reports if r.timing == "modelled"]
    if not modelled:
        return ""
    return (f"<p><b>timing: modelled</b> for {escape(', '.join(modelled))}: latencies and speedups there are the "
            "Ascend C twin's modelled cost from counted work (eager PyTorch modelled on the same SoC), not times "
            "measured on an NPU (docs/accelerator_backends.md).</p>")


def _same_failure(reports: list[RunReport]) -> str:
    items = "".join(f"<li><b>{escape(r.label)}</b>: {escape(r.same_failure.sentence())}</li>"
                    for r in reports if r.same_failure is not None)
    return f"<section class=problems><h2>Every attempt failed the same way</h2><ul>{items}</ul></section>" if items else ""


def _memory(report: RunReport) -> str:
    """Which memory items were in the prompts of feasible attempts, and how their values moved."""
    use = report.memory
    if not use.attempts_with_provenance:
        return "<p>No attempt records what its prompt showed (runs before provenance was recorded).</p>"
    rows = [[f"<code>{escape(u.id[:12])}</code>", escape(u.kind), escape(str(u.task or "—")),
             str(u.feasible_attempts), str(u.attempts)] for u in use.top_items]
    top = _table(["item", "kind", "from operator", "in feasible attempts' prompts", "in all prompts"], rows)
    trajectory_rows = []
    for item_id, points in use.trajectories.items():
        for stage in sorted({p.stage for p in points}):
            qs = [p.q for p in points if p.stage == stage]
            trajectory_rows.append([f"<code>{escape(item_id[:12])}</code>", escape(stage), str(len(qs)),
                                    f"{qs[0]:+.3f}", f"{qs[-1]:+.3f}", f"{min(qs):+.3f}", f"{max(qs):+.3f}"])
    trajectories = _table(["item", "stage", "times shown", "first Q", "last Q", "min Q", "max Q"], trajectory_rows) \
        if trajectory_rows else "<p>No Q values recorded.</p>"
    return (f"<p>{use.attempts_with_provenance} attempt(s) record what their prompts showed. Items most often "
            f"in the prompts of feasible attempts:</p>{top}<p>Q trajectories of the top items (Q when shown, "
            f"before that attempt's update):</p>{trajectories}")


def _figure(name: str, path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img alt="{escape(name)}" src="data:image/png;base64,{data}">'
            f'<figcaption><a href="{escape(path.name)}">{escape(path.name)}</a></figcaption></figure>')


def _problems(reports: list[RunReport]) -> str:
    items = "".join(f"<li><b>{escape(r.label)}</b>: {escape(p)}</li>" for r in reports for p in r.problems)
    return f'<section class=problems><h2>Problems in the input</h2><ul>{items}</ul></section>' if items else ""


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
figure { display: inline-block; margin: 0.5em; }
figure img { max-width: 560px; border: 1px solid #ddd; }
.problems { background: #fff6e0; border: 1px solid #e0b050; padding: 0.5em 1em; }
.reason { font-family: monospace; font-size: 0.85em; color: #633; }
.live { background: #e8f4ff; border: 1px solid #7ab; padding: 0.5em 1em; }
"""


def render_html(reports: list[RunReport], plots: dict[str, Path], generated_at: str,
                refresh_s: int | None = None) -> str:
    per_run = "".join(f"<h3>{escape(r.label)}</h3><p>{escape(r.run_dir)} — run id {escape(str(r.run_id))}, "
                      f"{escape(str(r.started_at))} to {escape(str(r.finished_at))}</p>{_operators(r)}"
                      for r in reports)
    memory = "".join(f"<h3>{escape(r.label)}</h3>{_memory(r)}" for r in reports)
    reload = f'<meta http-equiv="refresh" content="{refresh_s}">' if refresh_s else ""
    live = (f"<p class=live>The campaign is running: this page is rewritten as operators finish and "
            f"reloads itself every {refresh_s} s.</p>") if refresh_s else ""
    kernels = "".join(f"<h3>{escape(r.label)}</h3><p>in {escape(r.run_dir)}/kernels/ "
                      f"(<code>evokernel export</code> copies them out)</p>{_kernels(r)}" for r in reports)
    climbs = "".join(f"<h3>{escape(r.label)}</h3>{climb}" for r in reports if (climb := _climb(r)))
    climb = f"<h2 id=climb>The climb: first and best kernels, modelled</h2>\n{climbs}" if climbs else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">{reload}<title>EvoKernel report</title><style>{STYLE}</style></head>
<body>
<h1>EvoKernel report</h1>
{live}
<p>Generated {escape(generated_at)} from {len(reports)} run folder(s). fast_0(t): share of operators
with a feasible kernel by iteration t; fast_1(t): share with a feasible kernel faster than eager.
Speedups are per operator: best feasible latency over the first feasible draft's, and the best
speedup over eager PyTorch; boxes show the median and the interquartile range.</p>
{_modelled_note(reports)}
{_same_failure(reports)}
{_problems(reports)}
<h2>Runs</h2>
{_comparison(reports)}
<h2>Figures</h2>
{"".join(_figure(name, path) for name, path in plots.items())}
<h2>Operators</h2>
{per_run}
<h2 id=kernels>Kernels</h2>
{kernels}
{climb}
<h2>Memory in the context of feasible attempts</h2>
{memory}
</body></html>
"""


class LiveReport:
    """RUN_DIR/report/ kept current while a campaign runs, for a user with no Grafana: rewritten
    in a background thread when an operator finishes (at most every `interval_s`), and once more,
    in the caller's thread, when the run ends. A failure is logged, never raised."""

    def __init__(self, run_dir: Path, interval_s: float = 20.0, reload_s: int = 30):
        self.run_dir, self.out_dir = Path(run_dir), Path(run_dir) / "report"
        self.interval_s, self.reload_s = interval_s, reload_s
        self._thread: threading.Thread | None = None
        self._last = 0.0
        self._lock = threading.Lock()

    def refresh(self, final: bool = False) -> None:
        if final:
            if self._thread is not None:
                self._thread.join()
            self._write(None)
            return
        with self._lock:
            busy = self._thread is not None and self._thread.is_alive()
            if busy or time.monotonic() - self._last < self.interval_s:
                return
            self._last = time.monotonic()
            self._thread = threading.Thread(target=self._write, args=(self.reload_s,), daemon=True,
                                            name="evokernel-live-report")
            self._thread.start()

    def _write(self, reload_s: int | None) -> None:
        try:
            write_report([self.run_dir], self.out_dir, refresh_s=reload_s, log_problems=False)
        except Exception as exc:  # noqa: BLE001 - the report must never stop the campaign
            log.warning("live_report_failed", error=f"{type(exc).__name__}: {exc}"[:300])
