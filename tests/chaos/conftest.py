"""Fixtures of the chaos suite: a seeded random source (``CHAOS_SEED`` to replay a run) and a
clean-up that ends whatever a failed test left running."""

import os
import random
from collections.abc import Iterator

import pytest


@pytest.fixture
def rng() -> random.Random:
    seed = int(os.environ.get("CHAOS_SEED") or random.randrange(1 << 30))
    print(f"CHAOS_SEED={seed}")  # shown on failure: the same faults at the same points
    return random.Random(seed)


@pytest.fixture
def cleanup() -> Iterator[list[object]]:
    jobs: list[object] = []
    yield jobs
    for job in jobs:
        job.stop()  # type: ignore[attr-defined]
