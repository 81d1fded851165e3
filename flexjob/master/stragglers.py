"""The master's straggler watch and pre-flight verdicts: node reports in, events and
exclusions out.

Feeds each member's own step time (``NodeStats.step_seconds``) to ``core.training.stragglers``; a
straggler is reported once per world (event ``node_straggling``: the master log, the job's
timeline and ``flexjob describe``; the counter ``flexjob_master_stragglers_total``). Under
``StragglerPolicy.EXCLUDE`` it is also excluded, as far as ``min_nodes`` allows: the KV key
``names.KV_EXCLUDED_PREFIX + node`` (journaled, so a restarted master keeps it) keeps it out
of every later world, and the service takes it out of the running one so the others re-form
after their current step. Nodes that failed a new world's pre-flight check
(``trainer.preflight``: its ranks ask with ``ExcludeNodes``) are excluded the same way (event
``preflight_failed``). Deciding is ``core.training.stragglers`` / ``core.training.preflight``; this
module only carries it out.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from flexjob.api import names
from flexjob.api.enums import StragglerPolicy
from flexjob.core.training.rendezvous import Rendezvous
from flexjob.core.training.stragglers import StragglerWatch, to_exclude
from flexjob.master.kv import KVStore
from flexjob.master.logs import event
from flexjob.observe import metrics
from flexjob.observe.timeline import PREFLIGHT_FAILED, STRAGGLING

log = logging.getLogger(__name__)

STRAGGLERS = metrics.counter(
    "flexjob_master_stragglers",
    "Straggler nodes found (once per node and world), by what was done.",
    ("job_name", "node", "action"),
)


def excluded(kv: KVStore, node_id: str) -> bool:
    """Whether ``node_id`` is kept out of the job's worlds."""
    return kv.get(names.KV_EXCLUDED_PREFIX + node_id) is not None


class StragglerGuard:
    def __init__(
        self, job: str, policy: StragglerPolicy, watch: StragglerWatch, min_nodes: int
    ) -> None:
        self._job = job
        self.policy = policy
        self._watch = watch
        self._min_nodes = min_nodes
        self._reported: set[tuple[str, int]] = set()

    def observe(self, node_id: str, rdzv: Rendezvous, step_seconds: float, now: float) -> None:
        """A stats report: counts when the node is a member of the running world."""
        world = rdzv.world
        if self.policy is StragglerPolicy.OFF or world is None or node_id not in world.members:
            return
        self._watch.observe(node_id, world.round, step_seconds, now)

    def check(self, rdzv: Rendezvous, kv: KVStore, now: float) -> list[tuple[str, dict[str, str]]]:
        """Report new stragglers and mark those to exclude in ``kv``; returns them, each with
        the journal entry of its mark (the caller appends it and takes the node out of the
        world)."""
        world = rdzv.world
        if self.policy is StragglerPolicy.OFF or world is None or rdzv.broken:
            return []
        found = [
            s
            for s in self._watch.stragglers(world.members, world.round, now)
            if (s.node, world.round) not in self._reported
        ]
        out = (
            to_exclude([s.node for s in found], len(world.members), self._min_nodes)
            if self.policy is StragglerPolicy.EXCLUDE
            else []
        )
        for s in found:
            self._reported.add((s.node, world.round))
            action = "excluded" if s.node in out else "reported"
            STRAGGLERS.labels(self._job, s.node, action).inc()
            event(
                log,
                STRAGGLING,
                self._job,
                node=s.node,
                step_seconds=round(s.step_seconds, 4),
                others_seconds=round(s.others_seconds, 4),
                times_slower=round(s.times_slower, 2),
                action=action,
            )
        for node in out:
            self._watch.forget(node)
        return [(node, kv.set(names.KV_EXCLUDED_PREFIX + node, b"straggler")) for node in out]

    def exclude_failed(
        self, requester: str, rdzv: Rendezvous, kv: KVStore, round_: int, reasons: Mapping[str, str]
    ) -> list[tuple[str, dict[str, str]]]:
        """Members of world ``round_`` that failed its pre-flight check (node → why, worst
        first), as a member of that world reports them: mark those to exclude in ``kv`` (as
        ``check`` does); a stale round or a requester outside the world changes nothing."""
        world = rdzv.world
        if world is None or world.round != round_ or requester not in world.members:
            return []
        new = [n for n in reasons if n in world.members and not excluded(kv, n)]
        gone = sum(1 for m in world.members if excluded(kv, m))
        out = to_exclude(new, len(world.members) - gone, self._min_nodes)
        for node in new:
            if (node, world.round) in self._reported:
                continue
            self._reported.add((node, world.round))
            action = "excluded" if node in out else "kept (the world's minimum)"
            event(log, PREFLIGHT_FAILED, self._job, node=node, reason=reasons[node], action=action)
        for node in out:
            self._watch.forget(node)
        return [(node, kv.set(names.KV_EXCLUDED_PREFIX + node, b"preflight")) for node in out]
