"""Creates a reconcile pass hands off instead of waiting for them (the kopf operator).

A pass decides, marks the replicas it creates as expected in the ``WatchCache`` (counted as
existing by every later pass: ``core.operator.expectations``) and hands the run of actions that
creates them to ``CreateDispatcher.send``; the pass then writes the job's status and ends. The run
goes out on the dispatcher's own threads through the same slow-start window a waiting pass used
(``reconcile_pass._slow_start``: one in flight, one more for each success, up to ``parallel``),
driven by the requests' completions, with no thread waiting for them. Each create's answer puts
its pod in the cache (the expectation ends); the pod's watch event brings the job's next pass.

A refused action stops the run (nothing more of it is sent); the job gets a ``FailedCreate``
Warning event, and ``settled(key, False)`` lets the work queue retry the job with its backoff
(``settled(key, True)`` ends the job's run of failures). When a run ends, the expectations of
whatever it did not create are cleared (refused, never sent, already there), so the next pass
decides from what the watch shows. The dispatcher's threads (``in_flight`` of them) bound the
creates the process has in flight, whatever the number of passes dispatching.

The job's status patch goes out the same way (``write_status``): one request at a time per job,
in the order the passes wrote them (those that queued meanwhile composed into one), each
applied to the job the cache gives later passes until it is answered; a refused patch retries
the job like a refused create.

With ``PodCreates`` (the kopf operator's default) the pod creates go out from its one event
loop instead of a thread each (``kubernetes.pod_creates``), through the same window.

A job being deleted is ``halt``ed first: its runs send nothing more, and its release waits for
what they have in flight, so that no pod is created after the release listed the job's pods.
"""

import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from flexjob.core.operator.actions import Action, CreateReplica
from flexjob.core.operator.status_patch import StatusPatch, compose_patches
from flexjob.operator.reconcile_pass import ActionFailed, apply_one, feed, report_failure
from flexjob.operator.watch_cache import JobKey, WatchCache

if TYPE_CHECKING:
    from flexjob.operator.kubernetes.pod_creates import PodCreates
from flexjob.platform.contract import AlreadyExistsError, NotFoundError, Platform, Replica

logger = logging.getLogger(__name__)

#: Told when a dispatched run ended: the job and whether every action went through.
Settled = Callable[[JobKey, bool], None]


class CreateDispatcher:
    """Sends runs of actions that create replicas in the background (``send``)."""

    def __init__(
        self,
        platform: Platform,
        cache: WatchCache,
        parallel: int,
        in_flight: int,
        settled: Settled,
        creates: "PodCreates | None" = None,
    ) -> None:
        #: Where pod creates go when given (one event loop, not a thread each: ``pod_creates``).
        self._creates = creates
        self._platform = platform
        self._cache = cache
        self._parallel = max(1, parallel)
        self._settled = settled
        self._runs = itertools.count(1)
        self._changed = threading.Condition()
        self._halted: set[JobKey] = set()
        self._active: dict[JobKey, int] = {}  # runs and status writes not ended, by job
        self._writes: dict[JobKey, list[tuple[int, StatusPatch]]] = {}  # queued, in order
        #: Seconds from each run's dispatch to its end, in the order they ended (benchmarks).
        self.durations: list[float] = []
        self._pool = ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="flexjob-create")

    def send(self, key: JobKey, actions: Sequence[Action]) -> None:
        """Expect the replicas ``actions`` create, then send them (returns at once)."""
        run = next(self._runs)
        self._cache.expect(key, (a.request for a in actions if isinstance(a, CreateReplica)), run)
        with self._changed:
            self._active[key] = self._active.get(key, 0) + 1
        _Dispatch(self, key, actions, run).pump()

    def write_status(self, key: JobKey, patch: StatusPatch) -> None:
        """Send the job's status ``patch`` after the ones sent before it (one at a time per
        job, in order); the cache applies it to the job until answered (returns at once)."""
        write = next(self._runs)
        self._cache.status_sent(key, patch, write)
        with self._changed:
            self._active[key] = self._active.get(key, 0) + 1
            chain = self._writes.setdefault(key, [])
            chain.append((write, patch))
            first = len(chain) == 1
        if first:
            try:
                self._pool.submit(self._write_chain, key)
            except RuntimeError:  # shut down: the process is stopping
                logger.debug("job %s/%s: status not written, the operator stops", *key)

    def _write_chain(self, key: JobKey) -> None:
        """Write the job's queued status patches in order until none is left; those queued
        while one was on its way go out as one (``compose_patches``)."""
        while True:
            with self._changed:
                queued = list(self._writes[key])
            patch: StatusPatch = {}
            for _, later in queued:
                patch = compose_patches(patch, later)
            ok, job = True, None
            try:
                job = self._platform.patch_job_status(*key, patch)
            except NotFoundError:
                logger.info("job %s/%s disappeared while its status was written", *key)
            except Exception:
                logger.exception("writing the status of job %s/%s failed", *key)
                ok = False
            for write, _ in queued:
                try:  # nothing here may stop the chain: the job's later patches wait on it
                    self._cache.status_answered(key, write, job)
                    self._settled(key, ok)
                except Exception:  # the loop is closed: the process is stopping
                    logger.debug("job %s/%s: status written after the operator", *key)
                finally:
                    self._ended(key)
            with self._changed:  # one writer per job: the next patches, or this one ends
                chain = self._writes[key]
                del chain[: len(queued)]
                if not chain:
                    del self._writes[key]
                    return

    def halted(self, key: JobKey) -> bool:
        with self._changed:
            return key in self._halted

    def halt(self, key: JobKey, timeout: float = 60.0) -> bool:
        """Send nothing more for ``key`` (its job is being deleted) and wait until what its
        runs have in flight ended (at most ``timeout`` seconds; False when it did not)."""
        with self._changed:
            self._halted.add(key)
            return self._changed.wait_for(lambda: not self._active.get(key), timeout)

    def forget(self, key: JobKey) -> None:
        """The job is gone: a new job of its name may be dispatched for again."""
        with self._changed:
            self._halted.discard(key)

    def _ended(self, key: JobKey) -> None:
        with self._changed:
            left = self._active.get(key, 0) - 1
            if left > 0:
                self._active[key] = left
            else:
                self._active.pop(key, None)
            self._changed.notify_all()

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._creates is not None:
            self._creates.close()


class _Dispatch:
    """One dispatched run: its slow-start window, driven by its requests' completions."""

    def __init__(
        self, dispatcher: CreateDispatcher, key: JobKey, actions: Sequence[Action], run: int
    ) -> None:
        self._d = dispatcher
        self._key = key
        self._actions = actions
        self._run = run
        self._lock = threading.Lock()
        self._window = 1
        self._sent = 0
        self._in_flight = 0
        self._failures: list[tuple[int, ActionFailed]] = []
        self._ended = False
        self._started = time.perf_counter()
        self._done = feed(dispatcher._cache, *key, run)

    def pump(self) -> None:
        """Send what the window allows; once nothing is in flight or left to send, end."""
        halted = self._d.halted(self._key)
        with self._lock:
            to_send: list[int] = []
            while (
                not halted
                and not self._failures
                and self._sent < len(self._actions)
                and self._in_flight < self._window
            ):
                to_send.append(self._sent)
                self._sent += 1
                self._in_flight += 1
            ended = (
                not self._ended
                and self._in_flight == 0
                and bool(halted or self._failures or self._sent == len(self._actions))
            )
            self._ended = self._ended or ended
        for index in to_send:
            self._submit(index)
        if ended:
            self._end()

    def _submit(self, index: int) -> None:
        action = self._actions[index]
        creates = self._d._creates
        if creates is not None and isinstance(action, CreateReplica):
            try:
                sent = creates.create(action.request)
            except RuntimeError as exc:  # its loop is closed: the process is stopping
                self._completed(index, ActionFailed(action, exc))
                return
            sent.add_done_callback(lambda f: self._completed(index, self._created(f, action)))
            return
        try:
            future = self._d._pool.submit(apply_one, self._d._platform, action, self._done)
        except RuntimeError as exc:  # shut down: the process is stopping
            self._completed(index, ActionFailed(action, exc))
            return
        future.add_done_callback(lambda f: self._completed(index, _outcome(f, action)))

    def _created(self, future: "Future[Replica]", action: CreateReplica) -> ActionFailed | None:
        """What a create sent through ``PodCreates`` ended with, as ``apply_one`` says it:
        its pod fed to the cache; one already there or whose job is gone skipped."""
        if future.cancelled():
            return ActionFailed(action, RuntimeError("cancelled: the operator is stopping"))
        error = future.exception()
        if isinstance(error, AlreadyExistsError | NotFoundError):
            logger.debug("skipped %s: %s", type(action).__name__, error)
            return None
        if isinstance(error, Exception):
            return ActionFailed(action, error)
        self._done(action, future.result())
        return None

    def _completed(self, index: int, outcome: ActionFailed | None) -> None:
        with self._lock:
            self._in_flight -= 1
            if outcome is None:
                self._window = min(self._window + 1, self._d._parallel)
            else:
                self._failures.append((index, outcome))
        self.pump()

    def _end(self) -> None:
        self._d.durations.append(time.perf_counter() - self._started)
        names = [a.request.name for a in self._actions if isinstance(a, CreateReplica)]
        self._d._cache.settle(self._key, names, self._run)
        ok = not self._failures
        if not ok:
            failed = min(self._failures, key=lambda failure: failure[0])[1]
            logger.warning("job %s/%s: %s", *self._key, failed)
            try:  # a request of its own: not on the pod creates' loop, which may be this one
                self._d._pool.submit(report_failure, self._d._platform, *self._key, failed)
            except RuntimeError:  # shut down: the process is stopping
                logger.debug("job %s/%s: FailedCreate not recorded, stopping", *self._key)
        try:
            self._d._settled(self._key, ok)
        except Exception:  # the loop is closed: the process is stopping
            logger.debug("job %s/%s: run %d ended after the operator", *self._key, self._run)
        finally:
            self._d._ended(self._key)


def _outcome(future: "Future[ActionFailed | None]", action: Action) -> ActionFailed | None:
    """What a sent action's future ended with (cancelled at shutdown: a failure)."""
    if future.cancelled():
        return ActionFailed(action, RuntimeError("cancelled: the operator is stopping"))
    error = future.exception()
    return ActionFailed(action, error) if isinstance(error, Exception) else future.result()
