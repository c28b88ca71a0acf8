"""Report tests check structure (files, figures, axes), not pixels, so they render at low DPI."""

from __future__ import annotations

import pytest

from simsched.outputs.report import page


@pytest.fixture(autouse=True)
def low_dpi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(page, "DPI", 20)
