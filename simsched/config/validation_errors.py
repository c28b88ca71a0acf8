"""A pydantic validation error as an `InputError`: the path the user wrote and a plain message.

pydantic's locations carry the tags of the unions it chose a member of (`kind=poisson`,
`continuous_batching`, `latency=roofline`); users never wrote those, so they are dropped.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from simsched.config.batching import ContinuousBatchingConfig
from simsched.config.cluster import SERVICE_MODEL_TAGS
from simsched.config.field_names import field_names
from simsched.config.specs import UNION_TAGS
from simsched.errors import InputError

TAG_ERRORS = ("union_tag_invalid", "union_tag_not_found")
NUMBER_ERRORS = {"int_type": "a valid integer", "float_type": "a valid number"}


def pick_error(errors: list[Any]) -> Any:
    """The error to report: the first, except that a required key missing next to an unknown
    one (`rate_per_sec` for `rate_per_s`) is a misspelling, reported as the unknown key with the
    missing ones as the keys it may have meant."""
    first = errors[0]
    if first["type"] != "missing":
        return first
    parent = first["loc"][:-1]
    missing = [
        str(e["loc"][-1]) for e in errors if e["type"] == "missing" and e["loc"][:-1] == parent
    ]
    for error in errors:
        if error["type"] == "extra_forbidden" and error["loc"][:-1] == parent:
            return {**error, "ctx": {"expected": missing}}
    return first


def input_error(
    error: Any, label: str, context: str, model: type | None = None, fmt: str = "scenario"
) -> InputError:
    """The error as one line; `model` (the validated class) lets an unknown key be matched
    against the keys taken at its place; `fmt` names the file format an unknown key is not
    part of ("scenario", "calibration file")."""
    where = _location(error["loc"])
    subfield = getattr(error.get("ctx", {}).get("error"), "field", None)
    if subfield:  # a check over several fields that names the one it blames (SubfieldError)
        where = f"{where}.{subfield}" if where else subfield
    if error["type"] in TAG_ERRORS:  # the discriminator key is what the user got wrong
        where = f"{where}.{_tag_key(error)}"
    if context:
        where = f"{context}: {where}" if where else context
    return InputError(label, where, _message(error, model, fmt))


def _location(loc: tuple[Any, ...]) -> str:
    text = ""
    previous = None
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not _is_union_tag(str(part)) or part == previous:
            # a tag repeated is the field the tag's member holds: `cluster: {pools: [...]}` is
            # ('cluster', 'pools' (the tag), 'pools' (the field), 1, ...)
            text += f".{part}" if text else str(part)
        previous = part
    return text


def _is_union_tag(part: str) -> bool:
    # pydantic puts the chosen member of a union into the location; users never wrote it
    return part in UNION_TAGS or part in SERVICE_MODEL_TAGS or "[" in part or "(" in part


def _tag_key(error: Any) -> str:
    return str(error.get("ctx", {}).get("discriminator", "kind")).strip("'")


def _message(error: Any, model: type | None = None, fmt: str = "scenario") -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return _unknown_key(error, model, fmt)
    if kind == "union_tag_invalid":
        ctx = error["ctx"]
        known = str(ctx["expected_tags"]).replace("'", "")
        return f"unknown {_tag_key(error)} {ctx['tag']!r} (known: {known})"
    if kind == "union_tag_not_found":
        return "Field required"
    if kind in NUMBER_ERRORS:
        return _not_a_number(NUMBER_ERRORS[kind], error.get("input"))
    message = str(error["msg"])
    if kind == "literal_error":
        return message + _closest_choice(error)
    return message.removeprefix("Value error, ")


def _closest_choice(error: Any) -> str:
    """`; did you mean 'trtllm'?` when a written name is close to one the field takes (a typo
    such as `trt-llm` or `vlm`), else nothing."""
    written = error.get("input")
    choices = re.findall(r"'([^']*)'", str(error.get("ctx", {}).get("expected", "")))
    if not isinstance(written, str) or not choices:
        return ""
    close = difflib.get_close_matches(written, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _unknown_key(error: Any, model: type | None = None, fmt: str = "scenario") -> str:
    key = str(error["loc"][-1])
    if key == "total_kv_blocks" and "continuous_batching" in error["loc"]:
        return (
            "not a setting of the continuous_batching model: it takes num_gpu_blocks (KV blocks "
            "per replica), or works them out from gpu, model and gpu_memory_utilization"
        )
    if error["loc"][-2:-1] == ("token_server",) and key in ContinuousBatchingConfig.model_fields:
        return (
            "a setting of the continuous_batching service model only; this cluster's "
            "service_model is token_server"
        )
    # Only a close match is suggested: first among the required keys left missing beside it,
    # then among every key the model takes there (a misspelt optional key misses nothing).
    missing = error.get("ctx", {}).get("expected", [])
    taken = field_names(model, error["loc"]) if model is not None else []
    close = difflib.get_close_matches(key, missing, n=1, cutoff=0.5) or difflib.get_close_matches(
        key, taken, n=1, cutoff=0.6
    )
    if close:
        return f"unknown key (not part of the {fmt} format); did you mean {close[0]}?"
    return f"unknown key (not part of the {fmt} format; check the spelling)"


def _not_a_number(expected: str, value: Any) -> str:
    # Numbers are taken strictly: YAML's `true` or a quoted "1_5" is a mistake, not a number.
    if isinstance(value, bool):
        return f"Input should be {expected}, got the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"Input should be {expected}, got the text {value!r} (write numbers without quotes)"
    if isinstance(value, float) and value.is_integer():  # 1000.0 from JSON or Python
        return f"Input should be {expected}, got the float {value!r}: write it as an integer"
    if isinstance(value, float):
        return f"Input should be {expected}, got {value!r}, which has a fractional part"
    return f"Input should be {expected}, got {type(value).__name__} {value!r}"
