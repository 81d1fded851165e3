"""Building an object from the same-named fields of another: data classes, pydantic models,
protobuf messages and database rows.

For: the edges where a concept has a domain type and a wire or database type with the same
field names (``rpc.convert``, ``rpc.ps_convert``, ``brain.stats_store``): the names are listed once,
by the types themselves. A field that needs more than a copy (a nested message, an enum's
value, a renamed or computed field) is given by name and wins. Not for validation: the built
type checks its own values.
"""

from collections.abc import Callable, Sequence
from dataclasses import fields, is_dataclass
from typing import Any, TypeVar

T = TypeVar("T")
U = TypeVar("U")

#: Values that are never a repeated field: checked first, since the ``Sequence`` check is slow.
_SCALARS = (int, float, str, bytes, type(None))


def field_names(cls: type) -> list[str]:
    """The names ``cls(**values)`` takes: a data class's init fields, a pydantic model's fields,
    a protobuf message's fields, or a database row's columns but its primary key."""
    if is_dataclass(cls):
        return [f.name for f in fields(cls) if f.init]
    model_fields = getattr(cls, "model_fields", None)  # pydantic
    if model_fields is not None:
        return list(model_fields)
    descriptor = getattr(cls, "DESCRIPTOR", None)  # protobuf
    if descriptor is not None:
        return [f.name for f in descriptor.fields]
    table = getattr(cls, "__table__", None)  # SQLAlchemy
    if table is not None:
        return [c.key for c in table.columns if not c.primary_key]
    raise TypeError(f"{cls.__name__} has no field list to copy by")


_NAMES: dict[type, tuple[str, ...]] = {}  # a type's fields do not change: looked up once
#: Whether values of a type are repeated (copied as a tuple): the ``Sequence`` check is an ABC
#: look-up, slow on the master's every call, and a type's answer does not change.
_REPEATED: dict[type, bool] = {}


def build(cls: type[T], source: object, **given: Any) -> T:
    """A ``cls`` from the attributes of ``source`` named like its fields, ``given`` winning;
    a repeated value (a list, a protobuf repeated field) becomes a tuple."""
    values = dict(given)
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(field_names(cls))
    for name in names:
        if name not in given:
            value = getattr(source, name)
            kind = type(value)
            repeated = _REPEATED.get(kind)
            if repeated is None:
                repeated = _REPEATED[kind] = not issubclass(kind, _SCALARS) and issubclass(
                    kind, Sequence
                )
            values[name] = tuple(value) if repeated else value
    return cls(**values)


def codec(domain: type[T], wire: type[U]) -> tuple[Callable[[T], U], Callable[[U], T]]:
    """``(to_wire, from_wire)`` of two types whose fields all cross as they are."""
    return (lambda obj: build(wire, obj)), (lambda msg: build(domain, msg))
