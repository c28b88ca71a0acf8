"""The trace formats a scenario may name are exactly the formats there is a reader for.

`TraceFormat` spells its values out, as a Literal must for type checkers, so it cannot be built
from the reader registry; this test keeps the two lists from drifting apart.
"""

from __future__ import annotations

from typing import get_args

from simsched.config.specs import TraceFormat
from simsched.workload.formats import FORMATS


def test_trace_format_literal_names_every_registered_reader() -> None:
    # In the same order too, so that both error messages list the formats alike.
    assert get_args(TraceFormat) == FORMATS
