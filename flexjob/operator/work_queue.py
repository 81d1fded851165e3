"""A coalescing work queue of jobs to reconcile, drained by a few asyncio workers.

Many events about one job (its pods, its ScalePlans, its status) collapse into one pending
entry, so the operator does one pass per burst instead of one per event. Records how long each
pass took (``durations``) for the benchmark and for logs. Not a rate limiter: a failed pass is
logged and re-queued after ``retry_delay``, doubled for each failure in a row of that job up to
``max_retry_delay`` (a job whose pods the API refuses is not retried every second forever).

Jobs waiting in the queue come out highest ``spec.priority`` first (``JobPriority.rank``), then
in arrival order, so a burst of new jobs is created in priority order. An event that does not
carry the job's priority (a pod's, a ScalePlan's) keeps the rank last given for that job.

A pass that hands its creates or its status patch to ``create_dispatch`` returns how many it
handed off (``dispatched``); as each ends the dispatcher calls ``settled``: a refused one retries
the job with the same backoff as a failed pass, and the job's run of failures ends only once
they went through.

An event that only brings back what the job's last pass already saw (``handled``: the job's
version that pass left behind, e.g. its own status patch coming back over the watch; a pod as
that pass listed it) queues nothing: a pass now would decide what that one did. Objects that
pass did not see (a pod it created) still queue one.

An event may also wait (``put(..., batched=True)``: the pod events that do not report a
failure or a deletion): its job is queued ``batch_period`` seconds later, and every event of
that job meanwhile folds into that one pass (Kubernetes' Job controller batches pod events the
same way). The pass reads the cache after the last of them, so none is lost; an event that may
not wait queues the job at once and the waiting one is dropped. Events during a job's pass
queue it once more when it ends, after ``batch_period`` unless one of them may not wait.

The queue also holds the operator's ``WatchCache`` (``cache``): the handlers feed it before they
queue, the passes read it, and ``forget`` drops a gone job from it.
"""

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping

from flexjob.api import JobPriority
from flexjob.operator import observing
from flexjob.operator.create_dispatch import CreateDispatcher
from flexjob.operator.watch_cache import WatchCache

logger = logging.getLogger(__name__)

JobKey = tuple[str, str]


class JobQueue:
    """``put((namespace, name), rank)`` from handlers; ``run()`` drains it until cancelled."""

    def __init__(
        self,
        handle: Callable[[JobKey], Awaitable[object]],
        workers: int = 4,
        retry_delay: float = 1.0,
        cache: WatchCache | None = None,
        max_retry_delay: float = 60.0,
        dispatcher: CreateDispatcher | None = None,
        batch_period: float = 0.0,
    ) -> None:
        self._handle = handle
        #: Seconds a batched event waits before its job is queued (0: none waits).
        self.batch_period = batch_period
        self._batching: dict[JobKey, asyncio.TimerHandle] = {}
        #: What the watches saw, which the passes read (``reconcile_pass.observe``).
        self.cache = cache or WatchCache()
        self._workers = workers
        self._retry_delay = retry_delay
        self._max_retry_delay = max_retry_delay
        self._failures: dict[JobKey, int] = {}  # failed passes in a row
        self._queue: asyncio.PriorityQueue[tuple[int, int, JobKey]] = asyncio.PriorityQueue()
        self._order = itertools.count()
        self._ranks: dict[JobKey, int] = {}
        self._pending: set[JobKey] = set()
        self._running: set[JobKey] = set()
        self._again: dict[JobKey, bool] = {}  # -> whether every event since may wait
        # Passes whose dispatched creates have not settled yet, by job (``settled``).
        self._unsettled: dict[JobKey, int] = {}
        #: Where passes send their creates (``create_dispatch``); None: passes wait for them.
        self.dispatcher = dispatcher
        # What the job's last pass saw: object name -> its state (a version, a replica).
        self._handled: dict[JobKey, Mapping[str, object]] = {}
        #: Seconds each pass took, in completion order, and what it returned (None: it failed).
        self.durations: list[float] = []
        self.results: list[object] = []
        #: Seconds each pass's own work took on its thread, and what it returned (the kopf
        #: operator's passes; the rest of a duration is the event loop's part: starting the
        #: pass, taking its result).
        self.on_thread: list[tuple[float, object]] = []

    def put(
        self,
        key: JobKey,
        rank: int | None = None,
        seen: tuple[str, object] | None = None,
        batched: bool = False,
    ) -> None:
        """Queue ``key``; ``rank``: its job's ``JobPriority.rank`` when the event carries it;
        ``seen``: the object the event is about and its state, as ``handled`` takes them
        (nothing is queued when the last pass saw that object in that state); ``batched``:
        the job may wait ``batch_period`` seconds for more events (on the loop's thread)."""
        if rank is not None:
            self._ranks[key] = rank
        if seen is not None:
            last = self._handled.get(key, {})
            if seen[0] in last and last[seen[0]] == seen[1]:
                return
        batched = batched and self.batch_period > 0
        if key in self._running:  # picked up again once the running pass ends
            self._again[key] = self._again.get(key, True) and batched
        elif key in self._pending:
            return
        elif batched:
            if key not in self._batching:
                loop = asyncio.get_running_loop()
                self._batching[key] = loop.call_later(self.batch_period, self._batch_ended, key)
        else:
            waiting = self._batching.pop(key, None)
            if waiting is not None:
                waiting.cancel()
            self._pending.add(key)
            order = -self._ranks.get(key, JobPriority.NORMAL.rank)
            self._queue.put_nowait((order, next(self._order), key))
            observing.queue_depth(len(self._pending))

    def _batch_ended(self, key: JobKey) -> None:
        if self._batching.pop(key, None) is not None:
            self.put(key)

    def handled(self, key: JobKey, seen: Mapping[str, object]) -> None:
        """A pass of ``key`` ended having seen these objects (name -> state)."""
        self._handled[key] = seen

    def forget(self, key: JobKey) -> None:
        """The job is gone: drop its remembered rank, what its last pass saw, its cache."""
        self._ranks.pop(key, None)
        self._handled.pop(key, None)
        self._failures.pop(key, None)
        self.cache.forget(key)
        if self.dispatcher is not None:
            self.dispatcher.forget(key)

    def halt(self, key: JobKey) -> None:
        """The job is being deleted: its dispatched creates stop and those in flight end
        (blocks: run it off the loop)."""
        if self.dispatcher is not None and not self.dispatcher.halt(key):
            logger.warning("job %s/%s: creates still in flight after 60 s", *key)

    @property
    def idle(self) -> bool:
        """Nothing pending, waiting for its batch, running, or dispatched by a pass and not
        settled yet."""
        return (
            not self._pending and not self._running and not self._unsettled and not self._batching
        )

    async def run(self) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(self._workers):
                    group.create_task(self._work())
        finally:
            if self.dispatcher is not None:
                self.dispatcher.shutdown()

    async def _work(self) -> None:
        while True:
            _, _, key = await self._queue.get()
            self._pending.discard(key)
            observing.queue_depth(len(self._pending))
            self._running.add(key)
            started = time.perf_counter()
            result: object = None
            try:
                result = await self._handle(key)
                dispatched = int(getattr(result, "dispatched", 0))
                if dispatched:  # what it dispatched settles it
                    self._count_unsettled(key, dispatched)
                else:
                    self._failures.pop(key, None)
            except Exception:
                observing.failed("reconcile")
                logger.exception("reconciling %s/%s failed", *key)
                self._retry_later(key)
            finally:
                self.durations.append(time.perf_counter() - started)
                self.results.append(result)
                observing.reconciled(self.durations[-1], "kubernetes")
                self._running.discard(key)
                if key in self._again:
                    self.put(key, batched=self._again.pop(key))

    def settled(self, key: JobKey, ok: bool) -> None:
        """The creates a pass of ``key`` dispatched ended (``create_dispatch``): all went
        through (the job's run of failures ends), or one was refused (retried with backoff,
        as a failed pass). On the event loop's thread."""
        self._count_unsettled(key, -1)
        if ok:
            self._failures.pop(key, None)
        else:
            self._retry_later(key)

    def _count_unsettled(self, key: JobKey, change: int) -> None:
        # A run may settle before its pass's end is counted here: the count passes through 0.
        left = self._unsettled.get(key, 0) + change
        if left:
            self._unsettled[key] = left
        else:
            self._unsettled.pop(key, None)

    def _retry_later(self, key: JobKey) -> None:
        failures = self._failures[key] = self._failures.get(key, 0) + 1
        delay = min(self._retry_delay * 2 ** (failures - 1), self._max_retry_delay)
        logger.info("retrying %s/%s in %.1f s (failure %d in a row)", *key, delay, failures)
        asyncio.get_running_loop().call_later(delay, self.put, key)

    async def wait_idle(self, timeout: float) -> None:
        """Wait until nothing is pending or running (for tests and the benchmark)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while not self.idle:
                    await asyncio.sleep(0.01)
