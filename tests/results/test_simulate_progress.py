"""simulate() reports progress per variant, ending at the total."""

from __future__ import annotations

from pathlib import Path

import simsched

NOISY = Path(__file__).resolve().parents[2] / "scenarios" / "noisy_neighbor.yaml"


def test_progress_reaches_the_total_for_every_variant() -> None:
    calls: list[tuple[str, int, int]] = []
    result = simsched.simulate(
        simsched.load_scenario(NOISY), progress=lambda *args: calls.append(args)
    )
    for variant in result.variants:
        mine = [(done, total) for name, done, total in calls if name == variant]
        assert mine[0] == (0, 60)
        assert mine[-1] == (60, 60)
        assert [done for done, _ in mine] == sorted(done for done, _ in mine)
