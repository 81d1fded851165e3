"""Poll-with-a-deadline helpers for tests (never sleep-and-assert)."""

import subprocess
import time
from collections.abc import Callable
from typing import Any, TypeVar

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


def job_ended(proc: subprocess.Popen[Any], timeout: float, output: Callable[[], str]) -> int:
    """The exit code of the job process ``proc`` once it ends, within ``timeout`` seconds; else
    AssertionError with the job's ``output()``."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"job did not end in {timeout:.0f}s:\n{output()}") from None
