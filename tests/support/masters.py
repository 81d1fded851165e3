"""A fixture body that stops the master (or PS) it served."""

from collections.abc import Iterator
from typing import Protocol, TypeVar


class _Stops(Protocol):
    def stop(self) -> None: ...


S = TypeVar("S", bound=_Stops)


def serving(handle: S) -> Iterator[S]:
    """A fixture's body (``yield from serving(start_master(config))``): ``handle`` for the test,
    stopped after it."""
    try:
        yield handle
    finally:
        handle.stop()
