"""Every arrival kind a tenant may use: the open kinds (`arrival_specs.py`, instants known in
advance) and the kinds whose instants depend on the simulation (`session_specs.py`, which nests an
open kind to start its sessions). The union lives here, above both, so neither imports the other
in a circle."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Discriminator, Tag

from simsched.config.arrival_specs import OPEN_KINDS, OPEN_UNION, kind_tagger
from simsched.config.session_specs import ClosedLoopArrivals, SessionArrivals
from simsched.config.spec_base import Spec, rejecter

REACTIVE_KINDS = ("sessions", "closed_loop")
ARRIVAL_KINDS: dict[str, type[Spec]] = OPEN_KINDS | {
    "sessions": SessionArrivals,
    "closed_loop": ClosedLoopArrivals,
}

ArrivalSpec = Annotated[
    OPEN_UNION
    | Annotated[SessionArrivals, Tag("kind=sessions")]
    | Annotated[ClosedLoopArrivals, Tag("kind=closed_loop")]
    | Annotated[Any, BeforeValidator(rejecter("kind", ARRIVAL_KINDS, "a mapping")), Tag("kind=?")],
    Discriminator(kind_tagger(ARRIVAL_KINDS)),
]
