"""Every error a flexjob module defines is a ``FlexjobError``, in a kind or a family
(``api/errors.py``; docs/architecture.md, "Errors").

The modules are imported and their classes read (inheritance is not visible to the parser):
an exception class that is not a ``FlexjobError`` fails here, named with its module. Outside
``flexjob/api`` an error derives from a kind or a family, never from ``FlexjobError`` itself.
Left out: generated protobuf code (``rpc/gen``) and the brain's alembic scripts (run only by
alembic). A ``BaseException`` that is not an ``Exception`` (a stop signal) is not an error.
"""

import importlib
import inspect
import pkgutil

import flexjob
from flexjob.api.errors import FlexjobError

GENERATED = ("flexjob.rpc.gen", "flexjob.brain.migrations")


def defined_exceptions() -> list[type[Exception]]:
    found: list[type[Exception]] = []
    for info in pkgutil.walk_packages(flexjob.__path__, "flexjob."):
        if info.name.startswith(GENERATED):
            continue
        module = importlib.import_module(info.name)
        found.extend(
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, Exception)
            and value.__module__ == module.__name__
        )
    return found


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_every_error_is_a_flexjob_error() -> None:
    outside = sorted(_name(c) for c in defined_exceptions() if not issubclass(c, FlexjobError))
    assert not outside, outside


def test_errors_outside_api_belong_to_a_kind_or_family() -> None:
    direct = sorted(
        _name(c)
        for c in defined_exceptions()
        if FlexjobError in c.__bases__ and not c.__module__.startswith("flexjob.api.")
    )
    assert not direct, direct
