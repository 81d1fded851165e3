"""Copying the fields of a data class to and from the protobuf message of the same field names.

For: the converters in ``convert`` and ``ps_convert``, where most fields cross the wire as they
are. A field that needs more (a nested message, an enum, a value that means "unset") is passed
by name and wins. Repeated fields become tuples on the way in. Not for validation: the data
class or the backend checks values.
"""

from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any, TypeVar

from google.protobuf.message import Message

M = TypeVar("M", bound=Message)
T = TypeVar("T")


def to_pb(cls: type[M], obj: Any, **given: Any) -> M:
    """A ``cls`` message holding every field of the data class ``obj``, ``given`` winning."""
    values = {f.name: getattr(obj, f.name) for f in fields(obj) if f.name not in given}
    return cls(**values, **given)


def from_pb(cls: type[T], msg: Message, **given: Any) -> T:
    """The data class ``cls`` from the fields of ``msg`` of the same names, ``given`` winning."""
    values: dict[str, Any] = dict(given)
    for f in fields(cls):  # type: ignore[arg-type]
        if f.init and f.name not in given:
            value = getattr(msg, f.name)
            is_list = isinstance(value, Sequence) and not isinstance(value, str | bytes)
            values[f.name] = tuple(value) if is_list else value
    return cls(**values)


def codec(cls: type[T], message: type[M]) -> tuple[Callable[[T], M], Callable[[M], T]]:
    """``(to_pb, from_pb)`` of a data class whose fields all cross the wire as they are."""
    return (lambda obj: to_pb(message, obj)), (lambda msg: from_pb(cls, msg))
