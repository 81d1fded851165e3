"""The server's read cache (``server.read_cache``): what it keeps, for how long, and what drops
it; a fake clock, so nothing here waits."""

import threading

import pytest

from flexjob.server.metrics import ServerMetrics
from flexjob.server.read_cache import ReadCache


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _loader(values: list[int]):  # type: ignore[no-untyped-def]
    def load() -> int:
        values.append(len(values))
        return values[-1]

    return load


def test_a_read_is_kept_for_ttl_seconds_then_loaded_again() -> None:
    clock, loads = Clock(), []
    cache = ReadCache(ttl=1.0, clock=clock)
    load = _loader(loads)
    assert cache.read("list_jobs", "default", load) == 0
    clock.now += 0.99
    assert cache.read("list_jobs", "default", load) == 0
    clock.now += 0.02
    assert cache.read("list_jobs", "default", load) == 1
    assert len(loads) == 2


def test_keys_and_operations_are_kept_apart() -> None:
    loads: list[int] = []
    cache = ReadCache(ttl=1.0, clock=Clock())
    load = _loader(loads)
    assert [
        cache.read("list_jobs", "a", load),
        cache.read("list_jobs", "b", load),
        cache.read("get_job", "a", load),
        cache.read("list_jobs", "a", load),
    ] == [0, 1, 2, 0]


def test_the_servers_own_write_drops_every_read_kept() -> None:
    loads: list[int] = []
    cache = ReadCache(ttl=60.0, clock=Clock())
    load = _loader(loads)
    cache.read("list_replicas", ("default", "j"), load)
    cache.read("get_job", ("default", "j"), load)
    cache.invalidate()
    assert cache.read("list_replicas", ("default", "j"), load) == 2
    assert cache.read("get_job", ("default", "j"), load) == 3


def test_a_read_that_a_write_overtook_is_answered_but_not_kept() -> None:
    cache = ReadCache(ttl=60.0, clock=Clock())
    answers = iter(["before the write", "after the write"])

    def load() -> str:
        value = next(answers)
        if value == "before the write":
            cache.invalidate()  # the server's write lands while this read is on its way
        return value

    assert cache.read("get_job", "j", load) == "before the write"
    assert cache.read("get_job", "j", load) == "after the write"


def test_fresh_reads_the_platform_and_keeps_what_it_read() -> None:
    loads: list[int] = []
    cache = ReadCache(ttl=60.0, clock=Clock())
    load = _loader(loads)
    cache.read("list_replicas", "j", load)
    assert cache.read("list_replicas", "j", load, fresh=True) == 1
    assert cache.read("list_replicas", "j", load) == 1


def test_ttl_zero_reads_the_platform_every_time_and_a_negative_ttl_is_refused() -> None:
    loads: list[int] = []
    cache = ReadCache(ttl=0, clock=Clock())
    load = _loader(loads)
    assert [cache.read("get_job", "j", load) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError, match="cache ttl must be >= 0 seconds, got -1"):
        ReadCache(ttl=-1)


def test_concurrent_reads_of_one_key_wait_for_one_platform_call() -> None:
    metrics = ServerMetrics()
    cache = ReadCache(ttl=60.0, reads=metrics.platform_reads, clock=Clock())
    entered, release = threading.Event(), threading.Event()
    calls: list[int] = []

    def slow() -> str:
        calls.append(1)
        entered.set()
        assert release.wait(10)
        return "jobs"

    first = threading.Thread(target=cache.read, args=("list_jobs", "ns", slow))
    first.start()
    assert entered.wait(10)
    answers: list[str] = []
    others = [
        threading.Thread(target=lambda: answers.append(cache.read("list_jobs", "ns", slow)))
        for _ in range(4)
    ]
    for t in others:
        t.start()
    release.set()
    for t in [first, *others]:
        t.join(10)
    assert answers == ["jobs"] * 4
    assert len(calls) == 1
    assert (metrics.reads("platform"), metrics.reads("cache")) == (1, 4)


def test_a_failed_read_is_not_kept_and_the_keys_kept_are_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flexjob.server import read_cache

    clock = Clock()
    cache = ReadCache(ttl=1.0, clock=clock)

    def missing() -> int:
        raise LookupError("job default/nope not found")

    with pytest.raises(LookupError):
        cache.read("get_job", "nope", missing)
    assert cache._slots == {}  # a made-up name leaves nothing behind
    monkeypatch.setattr(read_cache, "MAX_KEYS", 3)
    for key in ("a", "b", "c"):
        cache.read("get_job", key, lambda: 0)
    clock.now += 2  # all three are stale now
    cache.read("get_job", "d", lambda: 1)
    assert list(cache._slots) == [("get_job", "d")]
