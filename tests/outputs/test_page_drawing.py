"""`page.save` draws a figure once, and log axes make tick objects only for the ticks in view:
both must leave the PNG exactly as matplotlib's own savefig of the stock figure writes it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simsched.outputs.report import page

# (low, high) of the data on a log axis: within one decade (minor labels only) and across three
LOG_SPANS = [(12.0, 17.0), (3.0, 4000.0)]


def cdf_figure(low: float, high: float, plain: bool):
    """Two panels sharing a log x axis, with the report's shared legend under them; `plain`
    gives them the report's tick labels and locators (`page.decorate`), else matplotlib's."""
    from simsched.outputs.report.legends import shared_legend

    fig, panels = page.small_multiples(2, sharex=True, sharey=True)
    values = np.geomspace(low, high, 50)
    for ax in panels:
        ax.step(values, np.linspace(0, 1, len(values)), where="post", label="tenant")
        ax.set_xscale("log")
        if plain:
            page.decorate(ax, "variant", "TTFT (ms, log scale)", "fraction")
    shared_legend(fig, panels)
    return fig


def heatmap_figure():
    """A colour bar beside a panel: constrained layout places both."""
    fig, (ax,) = page.small_multiples(1)
    image = ax.imshow(np.arange(12.0).reshape(3, 4), origin="lower", aspect="auto")
    fig.colorbar(image, ax=ax, label="p99 TTFT (ms)")
    ax.set_title("v", fontsize="medium")
    return fig


def stock_locators(fig):
    """Matplotlib's own log locators back (the report's labels kept): what the axis had."""
    from matplotlib.ticker import LogLocator

    for ax in fig.axes:
        ax.xaxis.set_major_locator(LogLocator(10))
        ax.xaxis.set_minor_locator(LogLocator(10, None))
    return fig


def stock_png(fig, path: Path) -> bytes:
    fig.savefig(path, dpi=page.DPI, metadata={"Software": None})  # savefig as it stands
    return path.read_bytes()


@pytest.mark.parametrize(("low", "high"), LOG_SPANS)
def test_one_draw_and_ticks_in_view_write_the_same_png(tmp_path: Path, low, high) -> None:
    """`page.save` of the report's figure against savefig of the same figure with matplotlib's
    locators: the same bytes, from fewer tick objects (none outside the view)."""
    ours = cdf_figure(low, high, plain=True)
    page.save(ours, tmp_path, "ours.png", "title", "caption")
    stock = stock_locators(cdf_figure(low, high, plain=True))
    assert (tmp_path / "ours.png").read_bytes() == stock_png(stock, tmp_path / "stock.png")
    made = len(ours.axes[0].xaxis.get_minor_ticks())
    assert made < len(stock.axes[0].xaxis.get_minor_ticks())


def test_one_draw_places_a_colour_bar_as_savefig_does(tmp_path: Path) -> None:
    page.save(heatmap_figure(), tmp_path, "ours.png", "title", "caption")
    stock = stock_png(heatmap_figure(), tmp_path / "stock.png")
    assert (tmp_path / "ours.png").read_bytes() == stock
