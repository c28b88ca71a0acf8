"""Priority classes: the scenario names them, the workload stores their index, the simulation
keeps one lane per class. Index 0 is served first wherever a policy gives classes an order."""

from __future__ import annotations

INTERACTIVE = 0
BATCH = 1
CLASS_NAMES = ("interactive", "batch")
CLASS_INDEX = {name: index for index, name in enumerate(CLASS_NAMES)}
