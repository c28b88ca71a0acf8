"""A pydantic validation error as an `InputError`: the path the user wrote and a plain message.

pydantic's locations carry the tags of the unions it chose a member of (`kind=poisson`,
`continuous_batching`, `latency=roofline`); users never wrote those, so they are dropped.
"""

from __future__ import annotations

from typing import Any

from simsched.config.cluster import SERVICE_MODEL_TAGS
from simsched.config.specs import UNION_TAGS
from simsched.errors import InputError

TAG_ERRORS = ("union_tag_invalid", "union_tag_not_found")


def input_error(error: Any, label: str, context: str) -> InputError:
    where = _location(error["loc"])
    if error["type"] in TAG_ERRORS:  # the discriminator key is what the user got wrong
        where = f"{where}.{_tag_key(error)}"
    if context:
        where = f"{context}: {where}" if where else context
    return InputError(label, where, _message(error))


def _location(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not _is_union_tag(str(part)):
            text += f".{part}" if text else str(part)
    return text


def _is_union_tag(part: str) -> bool:
    # pydantic puts the chosen member of a union into the location; users never wrote it
    return part in UNION_TAGS or part in SERVICE_MODEL_TAGS or "[" in part or "(" in part


def _tag_key(error: Any) -> str:
    return str(error.get("ctx", {}).get("discriminator", "kind")).strip("'")


def _message(error: Any) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown key (not part of the scenario format; check the spelling)"
    if kind == "union_tag_invalid":
        ctx = error["ctx"]
        known = str(ctx["expected_tags"]).replace("'", "")
        return f"unknown {_tag_key(error)} {ctx['tag']!r} (known: {known})"
    if kind == "union_tag_not_found":
        return "Field required"
    message = str(error["msg"])
    return message.removeprefix("Value error, ")
