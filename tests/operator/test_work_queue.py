"""The operator's work queue: bursts of events about one job become one reconcile pass."""

import asyncio

from flexjob.operator.work_queue import JobKey, JobQueue


async def run_queue(queue: JobQueue) -> asyncio.Task[None]:
    return asyncio.create_task(queue.run())


async def test_a_burst_of_events_for_one_job_runs_one_pass() -> None:
    seen: list[JobKey] = []

    async def handle(key: JobKey) -> None:
        seen.append(key)

    queue = JobQueue(handle, workers=2)
    for _ in range(50):
        queue.put(("ns", "a"))
    queue.put(("ns", "b"))
    task = await run_queue(queue)
    await queue.wait_idle(5)
    task.cancel()
    assert sorted(seen) == [("ns", "a"), ("ns", "b")]


async def test_an_event_during_a_pass_runs_the_job_once_more() -> None:
    release = asyncio.Event()
    calls = 0

    async def handle(key: JobKey) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            await release.wait()

    queue = JobQueue(handle, workers=2)
    queue.put(("ns", "a"))
    task = await run_queue(queue)
    while calls == 0:
        await asyncio.sleep(0.01)
    queue.put(("ns", "a"))
    queue.put(("ns", "a"))
    release.set()
    await queue.wait_idle(5)
    task.cancel()
    assert calls == 2


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
