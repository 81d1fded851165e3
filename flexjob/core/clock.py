"""The clocks long-running parts take as a parameter, so that tests can drive time.

``Clock``: seconds (``time.time`` or ``time.monotonic``); ``WallClock``: timezone-aware UTC
datetimes (``utc_now``), for what is compared with Kubernetes timestamps.
"""

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], float]
WallClock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)
