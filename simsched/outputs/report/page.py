"""Figures and the page that shows them: matplotlib's object API, and a self-contained HTML file.

Figures are `matplotlib.figure.Figure` objects, never pyplot, so nothing global changes and no
display is needed. The page embeds every plot (it opens anywhere on its own) and links each PNG
file beside it.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

INDEX = "index.html"
DPI = 100  # at 100% zoom a figure's inches are its size on screen; tests lower it for speed
Figure = Any  # matplotlib.figure.Figure, imported lazily so the CLI starts fast


@dataclass
class Plot:
    file: str
    title: str
    caption: str


def figure(rows: int, cols: int, sharey: bool = False, width: float = 0, height: float = 0):
    from matplotlib.figure import Figure  # lazy: matplotlib costs a second to import

    size = (width or max(6.0, 4.6 * cols), height or 3.6 * rows)
    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.subplots(rows, cols, squeeze=False, sharey=sharey)


MAX_COLUMNS = 4  # small multiples wrap after this many panels: readable at 100% zoom
PANEL_WIDTH, PANEL_HEIGHT = 4.0, 3.0  # inches per panel


def small_multiples(count: int, sharex: bool = False, sharey: bool = False):
    """A grid of `count` panels, at most MAX_COLUMNS a row (the spare ones removed), and the
    panels in reading order. Share an axis only where the panels compare the same quantity
    on the same scale; queue depths of different policies, say, keep their own."""
    from matplotlib.figure import Figure

    cols = min(max(count, 1), MAX_COLUMNS)
    rows = -(-max(count, 1) // cols)
    fig = Figure(
        figsize=(PANEL_WIDTH * cols + 0.6, PANEL_HEIGHT * rows + 0.4), layout="constrained"
    )
    grid = fig.subplots(rows, cols, squeeze=False, sharex=sharex, sharey=sharey)
    panels = [ax for row in grid for ax in row]
    for spare in panels[count:]:
        fig.delaxes(spare)
    return fig, panels[:count]


def variant_panels(
    variants: list[str], sharex: bool = True, sharey: bool = True
) -> tuple[Figure, Iterator[tuple[Any, str]]]:
    """Small multiples, a panel per variant (at most MAX_COLUMNS a row), and (panel, variant)
    pairs. Axes are shared where the panels compare the same quantity on the same scale."""
    fig, axes = small_multiples(len(variants), sharex=sharex, sharey=sharey)
    return fig, zip(axes, variants, strict=True)


def decorate(ax, title: str, xlabel: str, ylabel: str) -> None:
    """Title, both axis labels on every panel (shared axes hide the inner panels' ticks and
    labels, and in a wrapped grid a panel above an empty slot would show none), plain tick
    labels, a grid and the legend."""
    ax.set_title(title, fontsize="medium")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    # minor ticks too: a log axis within one decade has only minor ticks in view
    ax.tick_params(which="both", labelbottom=True, labelleft=True)
    plain_ticks(ax)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")


def plain_ticks(ax) -> None:
    """Log axes label their ticks as plain numbers (100, 1000, 2e+04). Matplotlib's default
    writes them as mathtext, and reports turn math parsing off (tenant ids are names, not
    formulas), so the default would print `$\\mathdefault{10^{2}}$` as it stands."""
    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "log":
            axis.set_major_formatter(_plain_log_formatter())
            axis.set_minor_formatter(
                _plain_log_formatter(labelOnlyBase=False, minor_thresholds=(2, 0.5))
            )
            axis.set_major_locator(_in_view(axis.get_major_locator()))
            axis.set_minor_locator(_in_view(axis.get_minor_locator()))


# A tick this close outside the view (a hundredth of a decade) is still kept: matplotlib draws
# a tick up to 1e-10 of the axis' span outside it, far less than this on any float axis.
IN_VIEW_SLACK = 10**0.01


def _in_view(locator):
    """The same log locator, returning only the ticks in view. Matplotlib's log locator also
    returns a decade of ticks below the view and two above; the axis makes a tick object (two
    tick marks, a grid line and two labels) for every one and draws only those in view, so on
    a log axis many tick objects were never drawn (making a CDF panel's minor ticks was about a
    quarter of its drawing time). The ticks drawn, and so every pixel, are the same."""
    from matplotlib.ticker import LogLocator

    if type(locator) is not LogLocator:  # not matplotlib's own, or already in view
        return locator
    in_view = _in_view_log_locator()
    clipped = in_view.__new__(in_view)
    clipped.__dict__.update(vars(locator))  # the scale's own base, subs and tick count
    return clipped


@cache
def _in_view_log_locator() -> type:
    """matplotlib's LogLocator returning only the ticks in view (`_in_view`); made once, on first
    use, since matplotlib is imported only when a report is drawn."""
    from matplotlib.ticker import LogLocator

    class InViewLogLocator(LogLocator):
        def tick_values(self, vmin, vmax):
            ticks = np.asarray(super().tick_values(vmin, vmax))
            low, high = sorted((vmin, vmax))
            if low <= 0:  # no log view: leave the ticks to matplotlib
                return ticks
            return ticks[(ticks >= low / IN_VIEW_SLACK) & (ticks <= high * IN_VIEW_SLACK)]

    return InViewLogLocator


def _plain_log_formatter(**options):
    """Matplotlib's LogFormatter (which ticks it labels), each label as `{:g}`: 0.8, not the
    `8e-01` it writes below 1."""
    from matplotlib.ticker import LogFormatter

    class PlainLogFormatter(LogFormatter):
        def _num_to_string(self, x, vmin, vmax):  # the one hook for the text of a label
            return f"{x:g}"

    return PlainLogFormatter(**options)


def save(fig: Figure, folder: Path, file: str, title: str, caption: str) -> Plot:
    with laid_out(fig):
        # no "Software" stamp: the same data gives the same bytes across matplotlib versions
        fig.savefig(folder / file, dpi=DPI, metadata={"Software": None})
    return Plot(file, title, caption)


@contextmanager
def laid_out(fig: Figure) -> Iterator[None]:
    """The figure with its constrained layout done and its layout engine off, for one savefig.

    Given a figure with a layout engine, savefig draws it twice: once with rendering switched
    off, only so that the engine runs inside `Figure.draw`, then for real with the engine off.
    The first draw is a fifth of a report's drawing time (every tick, label and legend is
    placed, then placed again). This runs the engine alone, as that draw would: on the PNG
    canvas savefig uses, at the DPI it saves at (text extents, so the margins, depend on both),
    and only when the figure has axes; then savefig draws once. The layout engine, canvas and
    DPI are put back afterwards, as savefig leaves them."""
    from matplotlib import rc_context
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    engine, canvas, dpi = fig.get_layout_engine(), fig.canvas, fig.dpi
    if engine is None or not fig.axes:
        yield
        return
    FigureCanvasAgg(fig)  # the canvas savefig would switch to for a PNG
    fig.dpi = DPI
    try:
        with suppress(ValueError):  # as Figure.draw: an engine may refuse a degenerate figure
            engine.execute(fig)
        # None means none only where the rc settings ask for no default engine
        with rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
            fig.set_layout_engine(None)
        yield
    finally:
        fig.set_layout_engine(engine)
        fig.set_canvas(canvas)
        fig.dpi = dpi


def write_index(
    folder: Path,
    title: str,
    plots: list[Plot],
    tables: list[tuple[str, pd.DataFrame]],
    description: str = "",
    lines: Sequence[str] = (),
    after: Sequence[tuple[str, pd.DataFrame]] = (),
) -> None:
    """The page: the title, the description and `lines` (one paragraph each) under it, the
    tables, the plots, then the `after` tables. Tables scroll inside their own box, so a wide
    one never widens the page."""
    parts = [f"<h1>{html.escape(title)}</h1>"]
    parts += [f'<p class="description">{html.escape(description)}</p>'] if description else []
    parts += [f"<p>{html.escape(line)}</p>" for line in lines]
    parts += [_table(heading, table) for heading, table in tables]
    for plot in plots:
        data = base64.b64encode((folder / plot.file).read_bytes()).decode("ascii")
        parts.append(
            f'<figure><h2>{html.escape(plot.title)}</h2><a href="{plot.file}">'
            f'<img src="data:image/png;base64,{data}" alt="{html.escape(plot.title)}"></a>'
            f"<figcaption>{html.escape(plot.caption)} ({plot.file})</figcaption></figure>"
        )
    parts += [_table(heading, table) for heading, table in after]
    page = PAGE.format(title=html.escape(title), body="\n".join(parts))
    (folder / INDEX).write_text(page, encoding="utf-8")


def _table(heading: str, table: pd.DataFrame) -> str:
    body = table.to_html(index=False, na_rep="") if len(table.columns) else ""
    return f'<h2>{html.escape(heading)}</h2><div class="table">{body}</div>'


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 1400px; }}
img {{ max-width: 100%; }} figure {{ margin: 2em 0; }}
.description {{ font-size: 1.1em; color: #333; }}
.table {{ max-width: 100%; overflow-x: auto; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
td, th {{ border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }}
</style></head><body>
{body}
</body></html>
"""
