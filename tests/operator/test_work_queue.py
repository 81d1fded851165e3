"""The operator's work queue: bursts of events about one job become one reconcile pass."""

import asyncio
import itertools

from flexjob.api import JobPriority
from flexjob.operator.work_queue import JobKey, JobQueue


async def run_queue(queue: JobQueue) -> asyncio.Task[None]:
    return asyncio.create_task(queue.run())


def recording(workers: int = 1) -> tuple[JobQueue, list[JobKey]]:
    """A queue whose handler records the key of each pass it runs, in order."""
    seen: list[JobKey] = []

    async def handle(key: JobKey) -> None:
        seen.append(key)

    return JobQueue(handle, workers=workers), seen


async def drain(queue: JobQueue) -> None:
    """Run ``queue`` until it has nothing left to do, then stop it."""
    task = await run_queue(queue)
    await queue.wait_idle(5)
    task.cancel()


async def test_a_burst_of_events_for_one_job_runs_one_pass() -> None:
    queue, seen = recording(workers=2)
    for _ in range(50):
        queue.put(("ns", "a"))
    queue.put(("ns", "b"))
    await drain(queue)
    assert sorted(seen) == [("ns", "a"), ("ns", "b")]


class FirstPassWaits:
    """A handler whose first pass waits for ``release``; ``calls`` counts its passes."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.calls = 0

    async def __call__(self, key: JobKey) -> None:
        self.calls += 1
        if self.calls == 1:
            await self.release.wait()


async def test_an_event_during_a_pass_runs_the_job_once_more() -> None:
    handle = FirstPassWaits()
    queue = JobQueue(handle, workers=2)
    queue.put(("ns", "a"))
    task = await run_queue(queue)
    while handle.calls == 0:
        await asyncio.sleep(0.01)
    queue.put(("ns", "a"))
    queue.put(("ns", "a"))
    handle.release.set()
    await queue.wait_idle(5)
    task.cancel()
    assert handle.calls == 2


async def test_a_failed_pass_is_retried() -> None:
    calls = 0

    async def handle(key: JobKey) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("API server hiccup")

    queue = JobQueue(handle, workers=1, retry_delay=0.01)
    queue.put(("ns", "a"))
    task = await run_queue(queue)
    deadline = asyncio.get_running_loop().time() + 5
    while calls < 2 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
    task.cancel()
    assert calls == 2


async def test_waiting_jobs_are_reconciled_highest_priority_first() -> None:
    queue, seen = recording()
    queue.put(("ns", "low"), JobPriority.LOW.rank)
    queue.put(("ns", "normal-1"), JobPriority.NORMAL.rank)
    queue.put(("ns", "high"), JobPriority.HIGH.rank)
    queue.put(("ns", "normal-2"))  # a pod event: no priority, normal
    await drain(queue)
    assert [name for _, name in seen] == ["high", "normal-1", "normal-2", "low"]


async def test_an_event_without_a_priority_keeps_the_jobs_rank() -> None:
    queue, seen = recording()
    queue.put(("ns", "a"), JobPriority.NORMAL.rank)
    queue.put(("ns", "b"), JobPriority.HIGH.rank)
    await drain(queue)
    seen.clear()
    queue.put(("ns", "a"))  # e.g. a pod of a: still normal
    queue.put(("ns", "b"))  # a pod of b: still high
    await drain(queue)
    assert [name for _, name in seen] == ["b", "a"]


def test_priority_ranks_order_low_normal_high() -> None:
    assert JobPriority.LOW.rank < JobPriority.NORMAL.rank < JobPriority.HIGH.rank
    assert JobPriority.rank_of(None) == JobPriority.NORMAL.rank
    assert JobPriority.rank_of("high") == JobPriority.HIGH.rank


async def test_an_event_about_what_the_last_pass_saw_runs_no_pass() -> None:
    seen: list[JobKey] = []

    async def handle(key: JobKey) -> None:
        seen.append(key)
        queue.handled(key, {"job": "7", "pod-0": "Running"})  # the pass left the job at 7

    queue = JobQueue(handle, workers=1)
    queue.put(("ns", "a"), seen=("job", "6"))
    task = await run_queue(queue)
    await queue.wait_idle(5)
    queue.put(("ns", "a"), seen=("job", "7"))  # the watch brings the pass's own patch back
    queue.put(("ns", "a"), seen=("pod-0", "Running"))  # a pod as the pass listed it
    await queue.wait_idle(5)
    assert seen == [("ns", "a")]
    queue.put(("ns", "a"), seen=("pod-0", "Failed"))  # the pod changed since
    await queue.wait_idle(5)
    queue.put(("ns", "a"), seen=("pod-1", "Pending"))  # a pod the pass did not list
    await queue.wait_idle(5)
    queue.put(("ns", "a"), seen=("job", "8"))  # someone else changed the job
    queue.put(("ns", "b"), seen=("job", "7"))  # another job's version 7 is not a's
    await queue.wait_idle(5)
    task.cancel()
    assert seen == [("ns", "a")] * 4 + [("ns", "b")]


async def assert_retried_ever_later(queue: JobQueue, times: list[float]) -> None:
    """Run ``queue`` with one job until its handler ran 5 times (``times``): the gaps follow
    the backoff 0.05, 0.1, 0.2, 0.2 s (``retry_delay=0.05, max_retry_delay=0.2``)."""
    queue.put(("ns", "a"))
    task = await run_queue(queue)
    deadline = asyncio.get_running_loop().time() + 10
    while len(times) < 5 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
    task.cancel()
    gaps = [later - earlier for earlier, later in itertools.pairwise(times[:5])]
    assert len(gaps) == 4
    for gap, least in zip(gaps, (0.05, 0.1, 0.2, 0.2), strict=True):
        assert gap >= least - 0.005  # call_later never fires early; a busy machine only later


async def test_a_pass_that_keeps_failing_is_retried_ever_later() -> None:
    times: list[float] = []

    async def handle(key: JobKey) -> None:
        times.append(asyncio.get_running_loop().time())
        raise RuntimeError("the API refuses the job's pods")

    queue = JobQueue(handle, workers=1, retry_delay=0.05, max_retry_delay=0.2)
    await assert_retried_ever_later(queue, times)


async def test_refused_dispatched_creates_are_retried_ever_later() -> None:
    """A pass that hands its creates off succeeds; their refusal (``settled(key, False)``)
    retries the job with the same growing backoff as a failed pass, and the queue is not idle
    while they are in flight."""
    times: list[float] = []

    class Passed:
        dispatched = True

    async def handle(key: JobKey) -> Passed:
        times.append(asyncio.get_running_loop().time())
        asyncio.get_running_loop().call_soon(queue.settled, key, False)  # the creates failed
        return Passed()

    queue = JobQueue(handle, workers=1, retry_delay=0.05, max_retry_delay=0.2)
    await assert_retried_ever_later(queue, times)


async def test_a_job_whose_creates_are_in_flight_keeps_the_queue_busy() -> None:
    async def handle(key: JobKey) -> object:
        return type("Passed", (), {"dispatched": True})()

    queue = JobQueue(handle, workers=1)
    queue.put(("ns", "a"))
    task = await run_queue(queue)
    await queue.wait_idle(0.3)
    assert not queue.idle  # its creates have not settled
    queue.settled(("ns", "a"), True)
    await queue.wait_idle(5)
    task.cancel()
    assert queue.idle


async def test_batched_events_of_a_job_wait_and_fold_into_one_pass() -> None:
    """Pod events that may wait (``batched``) queue their job once, after ``batch_period``:
    a burst of them runs one pass, after the last of them, and none is lost."""
    seen: list[JobKey] = []

    async def handle(key: JobKey) -> None:
        seen.append(key)

    queue = JobQueue(handle, workers=2, batch_period=0.05)
    task = await run_queue(queue)
    for _ in range(50):
        queue.put(("ns", "a"), batched=True)
    queue.put(("ns", "b"), batched=True)
    assert not queue.idle  # waiting for its batch
    await queue.wait_idle(5)
    task.cancel()
    assert sorted(seen) == [("ns", "a"), ("ns", "b")]


async def test_an_event_that_may_not_wait_runs_the_waiting_job_at_once() -> None:
    """A job waiting for its batch (an hour here) is queued at once by an event that may not
    wait (a failed pod): one pass, and nothing left waiting."""
    seen: list[JobKey] = []

    async def handle(key: JobKey) -> None:
        seen.append(key)

    queue = JobQueue(handle, workers=1, batch_period=3600)
    task = await run_queue(queue)
    queue.put(("ns", "a"), batched=True)
    queue.put(("ns", "a"))
    await queue.wait_idle(5)
    task.cancel()
    assert seen == [("ns", "a")]
    assert queue.idle


async def test_events_during_a_pass_run_the_job_again_at_once_unless_all_may_wait() -> None:
    """Events while a job's pass runs queue it once more when it ends: at once when one of
    them may not wait, after the batch period (an hour here: still waiting) when all may."""

    async def first_pass_then(*batched: bool, wait: float = 5) -> tuple[int, bool]:
        handle = FirstPassWaits()
        queue = JobQueue(handle, workers=1, batch_period=3600)
        task = await run_queue(queue)
        queue.put(("ns", "a"))
        while handle.calls == 0:
            await asyncio.sleep(0.01)
        for each in batched:
            queue.put(("ns", "a"), batched=each)
        handle.release.set()
        await queue.wait_idle(wait)
        task.cancel()
        return handle.calls, queue.idle

    assert await first_pass_then(True, False, True) == (2, True)
    # never idle (bounded wait): the job waits for its batch
    assert await first_pass_then(True, True, wait=0.5) == (1, False)
