"""Report tests check structure (files, figures, axes), not pixels, so they render at low DPI."""

from __future__ import annotations

import pytest

from simsched.outputs.report import cache_plots, page, plan_plots, scenario_plots, sweep_plots


@pytest.fixture(autouse=True)
def low_dpi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(page, "DPI", 20)


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Every figure a report or plot function saves, by file name (saving draws it, so tick
    labels exist); the figures are still drawn and saved as usual."""
    seen: dict = {}
    real = page.save

    def keep(fig, folder, file, title, caption):
        seen[file] = fig
        return real(fig, folder, file, title, caption)

    for module in (page, scenario_plots, sweep_plots, plan_plots, cache_plots):
        monkeypatch.setattr(module, "save", keep, raising=False)
    return seen
