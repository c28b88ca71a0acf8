"""`limits`: how large a run may grow before simsched refuses it rather than start it.

A scenario can ask, in a few characters, for more than any machine holds (a billion requests, a
million replicas, a timeline sample every microsecond over days). Such runs are refused up front
with a message naming the setting; one who has the memory raises the limit
(`--set limits.max_requests=50000000`). docs/scenario.md#limits.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

Positive = Annotated[int, Field(ge=1)]

# About what a request costs from generation to the written files (columns, outcome slot,
# frames, CSV rows): used to say how much memory a refused run would have needed.
BYTES_PER_REQUEST = 1024


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    # Expected requests of the whole workload (about 10 GiB at the default), and also the most
    # on/off sojourns one tenant's arrival process may draw.
    max_requests: Positive = 10_000_000
    max_replicas: Positive = 4096
    # Timeline rows over the arrival span (samples x replicas); a row is about 100 bytes.
    max_timeline_rows: Positive = 5_000_000
    # The size of a study (`sweep`, `plan`), checked before any run (studies/limits.py). Memory
    # is not what binds (a run keeps about 10 KB of tasks and result rows until the table is
    # written): time is. On a 2-core machine a run of a shipped scenario takes about a second,
    # so the default of 10,000 runs is an afternoon; past it a study is refused, not started.
    max_seeds: Positive = 1000  # --seeds of a sweep point or a plan probe
    max_grid_points: Positive = 10_000  # a sweep's grid points (--grid x --zip), before seeds
    max_combinations: Positive = 256  # a plan's --over combinations
    max_study_runs: Positive = 10_000  # simulations a sweep or plan may ask for, seeds included
