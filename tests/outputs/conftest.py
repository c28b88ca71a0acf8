"""Report tests check structure (files, figures, axes), not pixels, so they render at low DPI.

The fixtures themselves (`low_dpi`, `figures`, the shared noisy_neighbor report) live in
tests/conftest.py: tests outside this folder use them too.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def draw_at_low_dpi(low_dpi: None) -> None:
    """Every test here draws at the low DPI."""
