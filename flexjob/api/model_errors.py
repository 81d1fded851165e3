"""Turn a pydantic ``ValidationError`` into ``Problem``s with camelCase field paths.

Messages name what is allowed: enum and literal errors list the values, unknown fields get a
"did you mean" from the model's own field names. Not for cross-field rules (``api.validate``).
"""

import re
import types
from collections.abc import Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from flexjob.api.problems import Problem, join_path, one_of, unknown_field

_QUOTED = re.compile(r"'([^']*)'")


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (Union, types.UnionType)


def _unwrap(annotation: Any) -> Any:
    """``Annotated[X, ...]`` → X; ``X | None`` → X. A union of several types stays."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif _is_union(annotation):
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _field_of(model: type[BaseModel], key: str) -> Any:
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return info.annotation
    return None


def _step(current: Any, key: int | str) -> Any:
    """The annotation one ``loc`` step below ``current``; ``None`` when lost."""
    origin = get_origin(current)
    if isinstance(current, type) and issubclass(current, BaseModel) and isinstance(key, str):
        return _field_of(current, key)
    if origin is dict:
        return get_args(current)[1]
    if origin is list and isinstance(key, int):
        return get_args(current)[0]
    return None


def _tag_of(member: Any) -> str:
    return getattr(member, "__name__", str(member))


def field_loc(
    model: type[BaseModel], loc: Sequence[int | str]
) -> tuple[list[int | str], list[str]]:
    """``loc`` without pydantic's union member tags, and the tags met (the union's types)."""
    current: Any = model
    out: list[int | str] = []
    tags: list[str] = []
    for key in loc:
        if key == "[key]":
            continue
        current = _unwrap(current) if current is not None else None
        if current is not None and _is_union(current):
            members = {_tag_of(m): m for m in get_args(current)}
            tags = [t for t in members if t != "NoneType"]
            current = members.get(str(key))
            continue
        out.append(key)
        current = _step(current, key) if current is not None else None
    return out, tags


def type_at(model: type[BaseModel], loc: Sequence[int | str]) -> Any:
    """The (unwrapped) annotation found by walking ``loc`` from ``model``; ``None`` if lost."""
    current: Any = model
    for key in loc:
        current = _step(_unwrap(current), key)
        if current is None:
            return None
    return _unwrap(current)


def _allowed_fields(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    parent = type_at(model, loc)
    if isinstance(parent, type) and issubclass(parent, BaseModel):
        return [info.alias or name for name, info in parent.model_fields.items()]
    return []


def _message(error: ErrorDetails, union: list[str]) -> str:
    kind, value, ctx = error["type"], error["input"], error.get("ctx", {})
    if union:
        return f"{value!r} is not one of the types {', '.join(union)}"
    if kind in ("enum", "literal_error"):
        return one_of(value, _QUOTED.findall(str(ctx.get("expected", ""))))
    if kind == "missing":
        return "required field is missing"
    if kind in ("int_type", "int_from_float", "int_parsing") and isinstance(value, bool):
        return f"{value!r} is not a number: give a whole number"
    if kind in ("int_type", "int_from_float", "int_parsing"):
        return f"{value!r} is not a whole number"
    if kind == "greater_than_equal":
        return f"{value!r} is below the minimum {ctx['ge']}"
    if kind == "less_than_equal":
        return f"{value!r} is above the maximum {ctx['le']}"
    return f"{error['msg'].rstrip('.')}, got {value!r}"


def problems_from(exc: ValidationError, model: type[BaseModel], base: str = "") -> list[Problem]:
    """One ``Problem`` per bad field of ``exc`` (raised by ``model``), paths prefixed by
    ``base``; union branches of one field are reported once."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for error in exc.errors():
        # a bad dict key ends in "[key]": the path names the key itself
        loc, union = field_loc(model, error["loc"])
        parent = base
        for key in loc[:-1]:
            parent = join_path(parent, key)
        path = join_path(parent, loc[-1]) if loc else base
        if path in seen:
            continue
        seen.add(path)
        if error["type"] == "extra_forbidden":
            allowed = _allowed_fields(model, loc[:-1])
            problems.append(unknown_field(parent, str(loc[-1]), error["input"], allowed))
        else:
            problems.append(Problem(path, error["input"], _message(error, union)))
    return problems
