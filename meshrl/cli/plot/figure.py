"""Draw a run's main training curves from RUN_DIR/metrics.jsonl into one PNG.

    python -m meshrl.cli.plot.figure RUN_DIR [OUT.png]      (or: meshrl plot RUN_DIR --out OUT.png)

A grid of small panels (see `meshrl.cli.plot.panels`): reward with a ±std band, KL, entropy,
loss, grad norm, response length, truncation, clip fractions, the step time split (stacked),
throughput, learning rate, staleness. Panels whose metrics the run never logged are left
out; null (NaN/inf) values show as gaps. Uses matplotlib's Agg backend, so it needs no
display and never opens a window.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import numpy as np  # noqa: E402

from meshrl.cli.plot.panels import PANELS, Panel  # noqa: E402
from meshrl.cli.plot.series import PlotError, load_series  # noqa: E402
from meshrl.run_layout import RunDir

COLUMNS = 3


def _has_data(panel: Panel, series: dict[str, np.ndarray]) -> bool:
    return any(k in series and np.isfinite(series[k]).any() for k in panel.keys())


def _stack_component(keys: tuple[str, ...], series: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Sum of the keys per step; NaN where none of them has a value (a gap, not a zero)."""
    present = [series[k] for k in keys if k in series]
    if not present:
        return np.full(n, np.nan)
    values = np.vstack(present)
    total = np.nansum(values, axis=0)
    total[~np.isfinite(values).any(axis=0)] = np.nan
    return total


def _draw_stacked(ax, panel: Panel, steps: np.ndarray, series: dict[str, np.ndarray]) -> None:
    bottom = np.zeros(len(steps))
    for label, keys in panel.stacked:
        part = _stack_component(keys, series, len(steps))
        if not np.isfinite(part).any():
            continue
        top = bottom + np.nan_to_num(part)
        ax.fill_between(steps, bottom, top, where=np.isfinite(part), step="mid", alpha=0.6, label=label, linewidth=0)
        bottom = top


def _draw_panel(ax, panel: Panel, steps: np.ndarray, series: dict[str, np.ndarray]) -> None:
    if panel.stacked:
        _draw_stacked(ax, panel, steps, series)
    if panel.band and all(k in series for k in panel.band):
        mean, std = (series[k] for k in panel.band)
        ax.fill_between(steps, mean - std, mean + std, alpha=0.25, linewidth=0, label="± std")
    for key in panel.lines:
        if key in series and np.isfinite(series[key]).any():
            style = {"color": "black", "linewidth": 1.0} if panel.stacked else {}
            ax.plot(steps, series[key], marker="." if len(steps) < 40 else None, label=key, **style)
    ax.set_title(panel.title, fontsize=10)
    ax.set_ylabel(panel.ylabel, fontsize=8)
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3)
    if len(ax.get_legend_handles_labels()[0]) > 1:
        ax.legend(fontsize=7, loc="best")


def plot_run(run_dir: str | Path, out_png: str | Path | None = None) -> Path:
    """Write the curves of RUN_DIR/metrics.jsonl to `out_png` (default RUN_DIR/metrics.png).

    Raises PlotError when the run dir, its metrics file or any plottable metric is missing.
    """
    steps, series = load_series(run_dir)
    out = Path(out_png) if out_png is not None else RunDir(run_dir).plot
    return plot_series(steps, series, Path(run_dir).resolve().name, out, str(RunDir(run_dir).metrics))


def plot_series(steps: np.ndarray, series: dict[str, np.ndarray], name: str, out: Path, source: str) -> Path:
    """Draw the panels that have data to `out`, titled with the run's `name`; PlotError if none has."""
    panels = [p for p in PANELS if _has_data(p, series)]
    if not panels:
        raise PlotError(
            f"{source} has {len(steps)} steps but none of "
            f"the plotted metrics ({', '.join(sorted({k for p in PANELS for k in p.keys()}))})"
        )
    rows = math.ceil(len(panels) / COLUMNS)
    fig, axes = plt.subplots(rows, COLUMNS, figsize=(4.4 * COLUMNS, 2.9 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels):
        _draw_panel(ax, panel, steps, series)
        ax.set_xlabel("step", fontsize=8)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(f"{name} — {len(steps)} steps (last {steps[-1]:g})")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(plot_run(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
