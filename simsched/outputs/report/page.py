"""Figures and the page that shows them: matplotlib's object API, and a self-contained HTML file.

Figures are `matplotlib.figure.Figure` objects, never pyplot, so nothing global changes and no
display is needed. The page embeds every plot (it opens anywhere on its own) and links each PNG
file beside it.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

INDEX = "index.html"
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


def variant_panels(variants: list[str]) -> tuple[Figure, Iterator[tuple[Any, str]]]:
    """A figure with a panel per variant side by side (one y scale), and (panel, variant) pairs."""
    fig, axes = figure(1, len(variants), sharey=True)
    return fig, zip(axes[0], variants, strict=True)


def decorate(ax, title: str, xlabel: str, ylabel: str) -> None:
    ax.set_title(title, fontsize="medium")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")


def save(fig: Figure, folder: Path, file: str, title: str, caption: str) -> Plot:
    # no "Software" stamp: the same data gives the same bytes across matplotlib versions
    fig.savefig(folder / file, dpi=100, metadata={"Software": None})
    return Plot(file, title, caption)


def write_index(
    folder: Path, title: str, plots: list[Plot], tables: list[tuple[str, pd.DataFrame]]
) -> None:
    parts = [f"<h1>{html.escape(title)}</h1>"]
    for heading, table in tables:
        parts += [f"<h2>{html.escape(heading)}</h2>", table.to_html(index=False, na_rep="")]
    for plot in plots:
        data = base64.b64encode((folder / plot.file).read_bytes()).decode("ascii")
        parts.append(
            f'<figure><h2>{html.escape(plot.title)}</h2><a href="{plot.file}">'
            f'<img src="data:image/png;base64,{data}" alt="{html.escape(plot.title)}"></a>'
            f"<figcaption>{html.escape(plot.caption)} ({plot.file})</figcaption></figure>"
        )
    page = PAGE.format(title=html.escape(title), body="\n".join(parts))
    (folder / INDEX).write_text(page, encoding="utf-8")


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 1400px; }}
img {{ max-width: 100%; }} figure {{ margin: 2em 0; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
td, th {{ border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: right; }}
</style></head><body>
{body}
</body></html>
"""
