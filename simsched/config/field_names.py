"""The keys a scenario model takes at an error's location, for "did you mean ...?".

pydantic's `extra_forbidden` error names the unknown key and where it is, not the keys that would
have been right there. The location is walked down from `Scenario`: field by field, through
lists, and through unions by the tag pydantic put in the location (`kind=poisson`,
`continuous_batching`).
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, Tag


def field_names(root: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The field names of the model at `loc` (the location of a key inside it), or []."""
    current: Any = root
    for part in loc[:-1]:
        current = _step(current, part)
        if current is None:
            return []
    model = _model(current)
    return list(model.model_fields) if model is not None else []


def _step(annotation: Any, part: Any) -> Any:
    if isinstance(part, int):
        inner = _strip(annotation)
        args = typing.get_args(inner)
        return args[0] if typing.get_origin(inner) in (list, tuple) and args else None
    model = _model(annotation)
    if model is not None and part in model.model_fields:
        return model.model_fields[part].annotation
    return _member(annotation, str(part))


def _strip(annotation: Any) -> Any:
    """`annotation` without Annotated's metadata or an Optional's None."""
    while True:
        if typing.get_origin(annotation) is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if _is_union(annotation):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) == 1:
                annotation = members[0]
                continue
        return annotation


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _model(annotation: Any) -> type[BaseModel] | None:
    annotation = _strip(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _member(annotation: Any, tag: str) -> Any:
    """The union member pydantic chose under `tag`."""
    union = _strip(annotation)
    if not _is_union(union):
        return None
    for member in typing.get_args(union):
        tags = typing.get_args(member)[1:] if typing.get_origin(member) is typing.Annotated else ()
        if any(isinstance(m, Tag) and m.tag == tag for m in tags):
            return member
    return None
