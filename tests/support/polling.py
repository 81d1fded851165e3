"""Poll-with-a-deadline helper for tests (never sleep-and-assert)."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    probe: Callable[[], T | None], timeout: float = 10.0, interval: float = 0.05, what: str = ""
) -> T:
    """Call ``probe`` until it returns something truthy; that value, or AssertionError."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or probe}; last={last!r}")
