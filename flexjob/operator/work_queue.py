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
    ) -> None:
        self._handle = handle
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
        self._again: set[JobKey] = set()
        # Passes whose dispatched creates have not settled yet, by job (``settled``).
        self._unsettled: dict[JobKey, int] = {}
        #: Where passes send their creates (``create_dispatch``); None: passes wait for them.
        self.dispatcher = dispatcher
        # What the job's last pass saw: object name -> its state (a version, a replica).
        self._handled: dict[JobKey, Mapping[str, object]] = {}
        #: Seconds each pass took, in completion order, and what it returned (None: it failed).
        self.durations: list[float] = []
        self.results: list[object] = []

    def put(
        self, key: JobKey, rank: int | None = None, seen: tuple[str, object] | None = None
    ) -> None:
        """Queue ``key``; ``rank``: its job's ``JobPriority.rank`` when the event carries it;
        ``seen``: the object the event is about and its state, as ``handled`` takes them
        (nothing is queued when the last pass saw that object in that state)."""
        if rank is not None:
            self._ranks[key] = rank
        if seen is not None:
            last = self._handled.get(key, {})
            if seen[0] in last and last[seen[0]] == seen[1]:
                return
        if key in self._running:
            self._again.add(key)  # picked up again once the running pass ends
        elif key not in self._pending:
            self._pending.add(key)
            order = -self._ranks.get(key, JobPriority.NORMAL.rank)
            self._queue.put_nowait((order, next(self._order), key))
            observing.queue_depth(len(self._pending))

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
        """Nothing pending, running, or dispatched by a pass and not settled yet."""
        return not self._pending and not self._running and not self._unsettled

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
                    self._again.discard(key)
                    self.put(key)

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
