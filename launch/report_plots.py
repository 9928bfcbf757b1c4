"""The report's figures as PNG files: one line (or box) per run, so runs compare on the same axes."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on servers and in tests

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator, PercentFormatter  # noqa: E402

from launch.report import RunReport  # noqa: E402

FIGSIZE = (7.5, 4.5)
DPI = 110


def _no_data(ax, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="0.4")


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def plot_curve(reports: list[RunReport], field: str, title: str, ylabel: str, path: Path) -> Path:
    """Fraction of operators reaching a goal by iteration t, one step line per run."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    drawn = False
    for report in reports:
        curve = report.curves
        values = getattr(curve, field)
        if not curve.iterations:
            continue
        ax.step(curve.iterations, values, where="post", marker="o", markersize=3, linewidth=1.8,
                label=f"{report.label} ({values[-1]:.0%} of {len(report.operators)})")
        drawn = True
    ax.set_title(title)
    ax.set_xlabel("iteration t")
    ax.set_ylabel(ylabel)
    ax.set_ylim(-0.02, 1.02)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.grid(True, alpha=0.3)
    if drawn:
        ax.legend(title="run (final value)", loc="lower right")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        ax.set_xticks([])
        _no_data(ax, "no attempts recorded")
    return _save(fig, path)


def _label_2_and_5(value: float, _position: int) -> str:
    """Minor ticks of a log axis: label 2x and 5x (0.2x, 50x, ...), leave the rest blank."""
    mantissa = value / 10 ** math.floor(math.log10(value))
    return f"{value:g}x" if round(mantissa, 6) in (2.0, 5.0) else ""


def plot_speedups(reports: list[RunReport], field: str, title: str, ylabel: str, reference: str,
                  path: Path) -> Path:
    """Per-operator speedups as a box (median, IQR) with the points over it, one box per run."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    data = [getattr(report, field).values for report in reports]
    positions = [i + 1 for i, values in enumerate(data) if values]
    if positions:
        ax.boxplot([data[p - 1] for p in positions], positions=positions, widths=0.5, showfliers=False,
                   medianprops={"color": "tab:red", "linewidth": 2})
        for p in positions:
            values = data[p - 1]
            offsets = [(k % 7 - 3) * 0.04 for k in range(len(values))]
            ax.scatter([p + o for o in offsets], values, s=14, alpha=0.6, color="tab:blue", zorder=3)
            stats = getattr(reports[p - 1], field)
            ax.text(p + 0.28, stats.median, f"median\n{stats.median:.2f}x", va="center", fontsize=8,
                    color="tab:red")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.yaxis.set_minor_formatter(FuncFormatter(_label_2_and_5))
        ax.axhline(1.0, color="0.3", linestyle="--", linewidth=1, label=reference)
        ax.legend(loc="upper right")
    else:
        ax.set_yticks([])
        _no_data(ax, "no operator has a timed feasible kernel")
    ax.set_xticks(range(1, len(reports) + 1),
                  [f"{r.label}\n(n={getattr(r, field).n})" for r in reports])
    ax.set_xlim(0.4, len(reports) + 0.6)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.grid(True, axis="y", alpha=0.3, which="both")
    return _save(fig, path)


def plot_q_trajectories(report: RunReport, path: Path) -> Path:
    """Q of the run's most-shown memory items, each time a prompt showed them, one line per item and stage."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    names = {use.id: f"{use.kind} {use.task or ''} {use.id[:8]}".strip() for use in report.memory.top_items}
    for item_id, points in report.memory.trajectories.items():
        for stage in sorted({p.stage for p in points}):
            mine = [p for p in points if p.stage == stage]
            ax.plot([p.attempt for p in mine], [p.q for p in mine], marker="o", markersize=3, linewidth=1.5,
                    label=f"{names.get(item_id, item_id[:8])} ({stage})")
    ax.axhline(0.0, color="0.3", linestyle="--", linewidth=1)
    ax.set_title(f"Q of the most-shown memory items ({report.label})")
    ax.set_xlabel("attempt (order of attempts.jsonl)")
    ax.set_ylabel("Q when shown")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return _save(fig, path)


def write_plots(reports: list[RunReport], out_dir: Path) -> dict[str, Path]:
    """All figures of a report, by name; files in out_dir. Q trajectories only for runs whose
    attempts record what their prompts showed."""
    figures = {
        "correctness": plot_curve(reports, "fast_0", "Correctness: operators with a feasible kernel (fast_0)",
                                  "operators with a feasible kernel", out_dir / "correctness.png"),
        "fast_1": plot_curve(reports, "fast_1", "Operators with a feasible kernel faster than eager (fast_1)",
                             "operators faster than eager", out_dir / "fast_1.png"),
        "speedup_best_over_first": plot_speedups(
            reports, "speedup_best_over_first", "Best kernel over the first feasible draft",
            "speedup (first latency / best latency)", "1x = first feasible draft",
            out_dir / "speedup_best_over_first.png"),
        "speedup_vs_eager": plot_speedups(
            reports, "speedup_vs_eager", "Best kernel over eager PyTorch",
            "speedup over eager", "1x = eager PyTorch", out_dir / "speedup_vs_eager.png"),
    }
    for i, report in enumerate(reports):
        if report.memory.trajectories:
            figures[f"q_trajectories ({report.label})"] = plot_q_trajectories(
                report, out_dir / f"q_trajectories_{i + 1}.png")
    return figures
