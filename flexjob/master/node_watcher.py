"""The job master's watch on its job's replicas through the ``Platform`` (local or Kubernetes).

Feeds every change the platform reports (``watch_replicas``; re-listed after each watch
window) to the pure rule ``core.training.node_watch.observe`` and acts on what it returns: a replica
that is gone has its shards handed back and leaves the world at once
(``MasterService.replica_gone``, which also records the exit reason as the node's last failure,
where the OOM rule of the optimizer finds it); a replica pending longer than
``NodeHealthConfig.replica_pending_timeout`` is logged and recorded as a Warning event on the job.
Runs only in masters that have a platform (the master's ``scale_plan_platform``: the operator's
implicit masters). Not for deciding anything (the rule does) or relaunching (the operator does).
"""

import logging
import threading
from dataclasses import KW_ONLY, dataclass, field
from typing import Protocol

from flexjob.core.clock import WallClock, utc_now
from flexjob.core.operator.actions import EventType
from flexjob.core.training.node_watch import NodeWatchEvent, NodeWatchKind, NodeWatchState, observe
from flexjob.master.logs import event
from flexjob.platform.contract import Platform, Replica, WatchEventType
from flexjob.rpc.messages import NodeRef

log = logging.getLogger(__name__)

#: Job event reason of a replica pending too long.
PENDING_TOO_LONG_REASON = "ReplicaPendingTooLong"
#: Seconds one watch call lasts before the watcher re-lists (and checks pending ages).
WATCH_WINDOW_S = 5.0


class GoneSink(Protocol):
    """What the watcher tells about a gone replica (``MasterService``)."""

    def replica_gone(self, node: NodeRef, reason: str) -> None: ...


@dataclass(eq=False)
class NodeWatcher:
    """Watches ``namespace``/``job``'s replicas on ``platform``; ``start()`` runs it on a
    thread until ``stop()``; ``sync(replicas)`` runs one step of the rule (tests)."""

    platform: Platform
    namespace: str
    job: str
    master: GoneSink
    pending_timeout: float | None
    _: KW_ONLY
    window_s: float = WATCH_WINDOW_S
    clock: WallClock = utc_now
    _state: NodeWatchState = field(default_factory=NodeWatchState, init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)
    #: Every event acted on, oldest first (for tests and logs).
    events: list[NodeWatchEvent] = field(default_factory=list, init=False)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="master-node-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop watching; does not wait out a watch call in flight (the thread is a daemon and
        acts on nothing once stopped)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(0.5)

    def sync(self, replicas: list[Replica]) -> list[NodeWatchEvent]:
        """Apply the rule to the job's replicas as listed now and act on its events."""
        if self._stop.is_set():
            return []
        self._state, found = observe(self._state, replicas, self.clock(), self.pending_timeout)
        for ev in found:
            self._act(ev)
        return found

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._watch_once()
            except Exception:  # the platform may be briefly unreachable; try again
                log.exception("event=node_watch_failed job=%s", self.job)
                self._stop.wait(1.0)

    def _watch_once(self) -> None:
        seen = {r.name: r for r in self.platform.list_replicas(self.namespace, self.job)}
        self.sync(list(seen.values()))
        for change in self.platform.watch_replicas(self.namespace, self.job, self.window_s):
            if change.type is WatchEventType.DELETED:
                seen.pop(change.object.name, None)
            else:
                seen[change.object.name] = change.object
            self.sync(list(seen.values()))
            if self._stop.is_set():
                return

    def _act(self, ev: NodeWatchEvent) -> None:
        self.events.append(ev)
        if ev.kind is NodeWatchKind.GONE:
            node = NodeRef(ev.node_id, ev.replica_type, ev.replica_index)
            self.master.replica_gone(node, ev.reason)
            return
        event(log, "replica_pending_too_long", self.job, replica=ev.replica, reason=ev.reason)
        try:
            self.platform.record_event(
                self.namespace, self.job, PENDING_TOO_LONG_REASON, ev.reason, EventType.WARNING
            )
        except Exception:
            log.exception("event=event_not_recorded job=%s", self.job)
