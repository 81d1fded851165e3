"""Watches built from listing: poll, diff by key, yield ADDED / MODIFIED / DELETED.

For platforms without push notifications (the local SQLite store). Not for Kubernetes, which
has real watches.
"""

import time
from collections.abc import Callable, Hashable, Iterator
from typing import TypeVar

from flexjob.platform.contract import WatchEvent, WatchEventType

T = TypeVar("T")


def poll_watch(
    list_objects: Callable[[], list[T]],
    key: Callable[[T], Hashable],
    timeout: float,
    interval: float = 0.1,
) -> Iterator[WatchEvent[T]]:
    """ADDED for what exists now, then changes, until ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    seen: dict[Hashable, T] = {}
    while True:
        current = {key(obj): obj for obj in list_objects()}
        for k, obj in current.items():
            if k not in seen:
                yield WatchEvent(WatchEventType.ADDED, obj)
            elif seen[k] != obj:
                yield WatchEvent(WatchEventType.MODIFIED, obj)
        for k, obj in seen.items():
            if k not in current:
                yield WatchEvent(WatchEventType.DELETED, obj)
        seen = current
        if time.monotonic() >= deadline:
            return
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
