"""The report's figures: matplotlib rendered to inline SVG strings (no script, no network, a few kB each).

Why matplotlib to SVG: the figures are static (histograms, one curve), so a
charting library with JavaScript (Altair/Vega-Lite, Plotly) would add ~1 MB of
inlined script for nothing; SVG text scales, prints and stays small, and the
report opens offline in any browser. Every function takes binned data (never
raw scores), so a figure's size does not grow with the run.
"""

from __future__ import annotations

import io
import re

import numpy as np

COLOURS = ("#2b6cb0", "#c05621", "#2f855a", "#805ad5", "#b7791f", "#c53030", "#319795", "#718096", "#d53f8c")


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "bisent", "font.size": 9,
                         "axes.spines.top": False, "axes.spines.right": False})
    return plt


def _svg(fig, title: str) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    _plt().close(fig)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]                      # drop the XML prologue and DOCTYPE
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, flags=re.S)
    return svg.replace("<svg ", f'<svg role="img" aria-label="{title}" class="plot" ', 1)


def histogram(edges, series: dict[str, list[int]], *, title: str, xlabel: str, threshold: float | None = None,
              stacked: bool = True) -> str:
    """Bar histogram of binned counts, one colour per series (stacked), the threshold as a dashed line."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 3.0))
    edges = np.asarray(edges, dtype=float)
    if len(edges) >= 2 and series:
        widths = np.diff(edges)
        bottom = np.zeros(len(widths))
        for (name, counts), colour in zip(series.items(), COLOURS):
            c = np.asarray(counts, dtype=float)
            ax.bar(edges[:-1], c, width=widths, bottom=bottom if stacked else None, align="edge", color=colour,
                   alpha=0.85 if stacked else 0.55, label=f"{name} ({int(c.sum()):,})", linewidth=0)
            if stacked:
                bottom += c
        ax.legend(frameon=False, fontsize=8)
    else:
        ax.text(0.5, 0.5, "no scores in this run", ha="center", va="center", transform=ax.transAxes)
    if threshold is not None:
        ax.axvline(threshold, color="black", linestyle="--", linewidth=1)
        ax.annotate(f"threshold {threshold:.3f}", (threshold, 1), xycoords=("data", "axes fraction"),
                    xytext=(3, -10), textcoords="offset points", fontsize=8)
    ax.set_title(title, loc="left", fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("pairs")
    return _svg(fig, title)


def precision_floor(precision, kept, target: float | None = None) -> float:
    """Where the precision axis starts (in %): the lowest precision among thresholds that keep at least half of
    the pairs, floored to 5 points, and at most 80 (and below the precision asked for), so the band where the
    threshold is decided is not flattened against a 0-100 axis."""
    prec, kept = np.asarray(precision, dtype=float), np.asarray(kept, dtype=float)
    if not len(prec):
        return 0.0
    half = prec[kept >= 0.5 * kept.max()] if kept.max() > 0 else prec
    lo = min(80.0, 5 * np.floor(100 * float(half.min() if len(half) else prec.min()) / 5))
    if target is not None:
        lo = min(lo, 5 * np.floor((100 * target - 1) / 5))
    return float(max(0.0, lo))


def precision_yield(thresholds, precision, kept, *, title: str, xlabel: str, threshold: float | None = None,
                    target: float | None = None) -> str:
    """Estimated precision (left axis, from :func:`precision_floor` to 100) and pairs kept (right axis) against
    the threshold."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 3.0))
    if len(thresholds) and not len(precision):
        ax.plot(thresholds, kept, color=COLOURS[1], linewidth=1.4, label="pairs kept")
        ax.set_ylabel("pairs kept")
    elif len(thresholds):
        ax.plot(thresholds, 100 * np.asarray(precision, dtype=float), color=COLOURS[0], linewidth=1.8,
                label="estimated precision (no gold)")
        ax.set_ylim(precision_floor(precision, kept, target), 100.5)
        ax2 = ax.twinx()
        ax2.plot(thresholds, kept, color=COLOURS[1], linewidth=1.4, linestyle="-.", label="pairs kept")
        ax2.set_ylabel("pairs kept", color=COLOURS[1])
        ax2.spines["top"].set_visible(False)
        lines = ax.get_lines() + ax2.get_lines()
        ax.legend(lines, [ln.get_label() for ln in lines], frameon=False, fontsize=8, loc="lower left")
    else:
        ax.text(0.5, 0.5, "no calibration for this run", ha="center", va="center", transform=ax.transAxes)
    if threshold is not None:
        ax.axvline(threshold, color="black", linestyle="--", linewidth=1)
        ax.annotate(f"threshold {threshold:.3f}", (threshold, 0.02), xycoords=("data", "axes fraction"),
                    xytext=(3, 0), textcoords="offset points", fontsize=8)
    if target is not None:
        ax.axhline(100 * target, color="grey", linestyle=":", linewidth=1)
    ax.set_title(title, loc="left", fontsize=10)
    ax.set_xlabel(xlabel)
    if len(precision):
        ax.set_ylabel("precision %", color=COLOURS[0])
    return _svg(fig, title)


def bars(counts: dict[str, int], *, title: str, inner: dict[str, int] | None = None,
         labels: tuple[str, str] = ("all", "kept")) -> str:
    """Horizontal bars of named counts (reasons, retrieval directions), largest first; ``inner``
    (e.g. the pairs kept at the threshold) is drawn inside each bar."""
    plt = _plt()
    items = sorted(counts.items(), key=lambda kv: -kv[1])
    fig, ax = plt.subplots(figsize=(7.5, 0.6 + 0.3 * max(1, len(items))))
    if items:
        names = [k for k, _ in items][::-1]
        vals = [v for _, v in items][::-1]
        ax.barh(names, vals, color=COLOURS[0], label=labels[0] if inner else None)
        if inner:
            ivals = [inner.get(k, 0) for k in names]
            ax.barh(names, ivals, height=0.45, color=COLOURS[1], label=labels[1])
            ax.legend(frameon=False, fontsize=8, loc="lower right")
        for y, v in enumerate(vals):
            text = f"{v:,}" if not inner else f"{inner.get(names[y], 0):,} of {v:,}"
            ax.annotate(text, (v, y), xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
        ax.set_xlim(0, max(vals) * 1.2 or 1)
    else:
        ax.text(0.5, 0.5, "nothing to count", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(title, loc="left", fontsize=10)
    ax.set_xlabel("pairs")
    return _svg(fig, title)


def heatmap(matrix, rows: list[str], cols: list[str], *, title: str) -> str:
    """A word-alignment matrix S(i, j) (source words down, target words across), one vector cell per word
    pair (pcolormesh, not an embedded bitmap: the page fetches nothing, not even a data: image)."""
    plt = _plt()
    m = np.asarray(matrix, dtype=float).reshape(len(rows), len(cols))   # (I, J)
    fig, ax = plt.subplots(figsize=(min(9, 1.5 + 0.4 * max(1, len(cols))), min(7, 1.2 + 0.32 * max(1, len(rows)))))
    im = ax.pcolormesh(m, cmap="viridis", edgecolors="white", linewidth=0.3)
    ax.invert_yaxis()
    ax.set_xticks(np.arange(len(cols)) + 0.5, cols, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(np.arange(len(rows)) + 0.5, rows, fontsize=7)
    ax.set_xlabel("target words")
    ax.set_ylabel("source words")
    fig.colorbar(im, ax=ax, fraction=0.04).solids.set_rasterized(False)   # matplotlib would embed a PNG
    ax.set_title(title, loc="left", fontsize=10)
    return _svg(fig, title)
