"""Passes that do not wait for their creates never create a replica twice: every interleaving of
passes, creates reaching the API, their answers, watch events, refusals, a pod deleted by
someone else and an operator restart, explored exhaustively for a job of two workers.

The operator side is the real ``WatchCache`` (with its expectations,
``core.operator.expectations``) and
the real ``core.operator.reconcile`` decision; the API is a dict of pods by name (names are unique,
as in Kubernetes), the watch a FIFO of events. A killed operator's requests on the wire reach the
API before its successor lists, or never (a new operator takes seconds to start). Checked in every
reachable state: no create is decided while one of that name is in flight, nor for a pod the
operator's lifetime saw, none is ever answered AlreadyExists; and from every state, once the
events are drained and passes run, the job ends with exactly its two workers and no pass
wanting more: nothing wedged, nothing lost.
"""

from collections import deque
from dataclasses import dataclass, field, replace

from flexjob.api import ReplicaPhase, ReplicaType
from flexjob.core.operator.actions import CreateReplica
from flexjob.core.operator.reconcile import reconcile
from flexjob.operator.watch_cache import WatchCache
from flexjob.platform.contract import Replica
from tests.core.operator.reconcile_sim import T0, make_job, rank0_service

JOB = make_job(master=False, workers=2)
#: Services are not modelled: worker-0's (rank 0's, ``core.operator.torch_world``) exists from the
# start.
SERVICES = [rank0_service(JOB)]
KEY = (JOB.namespace, JOB.name)
PENDING = ReplicaPhase.PENDING
WANTED = {f"{JOB.name}-worker-0", f"{JOB.name}-worker-1"}


@dataclass
class Item:
    """One create a dispatch sent: in flight, then (landed) waiting for its answer."""

    name: str
    run: int
    life: int
    request: CreateReplica
    uid: str = ""  # set once it landed: its answer is due

    @property
    def replica(self) -> Replica:
        request = self.request.request
        return Replica(
            request.namespace, request.job, self.name, request.type, request.index, PENDING
        )


@dataclass
class World:
    clock: list[float] = field(default_factory=lambda: [0.0])
    life: int = 0
    cache: WatchCache | None = None
    api: dict[str, tuple[str, int]] = field(default_factory=dict)  # name -> (uid, by life)
    items: list[Item] = field(default_factory=list)
    failed_runs: set[int] = field(default_factory=set)
    watch: deque[tuple[str, Replica]] = field(default_factory=deque)
    runs: int = 0
    run_names: dict[int, list[str]] = field(default_factory=dict)
    known: set[str] = field(default_factory=set)  # uids this lifetime listed or was told of
    uids: int = 0
    refusals: int = 1
    deletions: int = 1
    restarts: int = 1
    violations: list[str] = field(default_factory=list)

    def new_cache(self) -> WatchCache:
        return WatchCache(clock=lambda: self.clock[0])

    def pod(self, name: str) -> Replica:
        uid, _ = self.api[name]
        index = int(name.rsplit("-", 1)[1])
        return Replica(JOB.namespace, JOB.name, name, ReplicaType.WORKER, index, PENDING, uid=uid)

    # --- the operator ----------------------------------------------------------------------
    def pass_(self) -> list[str]:
        """One pass: read (or list and prime), decide, expect and dispatch the creates."""
        if self.cache is None:
            self.cache = self.new_cache()
        seen = self.cache.read(KEY)
        if seen is None:
            listed = [self.pod(n) for n in self.api]
            self.known |= {r.uid for r in listed}
            self.cache.prime(KEY, listed, [], [], self.clock[0])
            seen = self.cache.read(KEY)
            assert seen is not None
        actions = reconcile(JOB, seen[1], T0, services=SERVICES).actions
        creates = [a for a in actions if isinstance(a, CreateReplica)]
        for a in creates:
            name = a.request.name
            if name in self.api and self.api[name][0] in self.known:
                self.violations.append(f"{name} decided though this lifetime saw it")
            for item in self.items:
                open_ = not item.uid or self.api.get(name, ("", 0))[0] == item.uid
                if item.name == name and item.life == self.life and open_:
                    self.violations.append(f"{name} decided while its create is in flight")
        if creates:
            self.runs += 1
            self.run_names[self.runs] = [a.request.name for a in creates]
            self.cache.expect(KEY, (a.request for a in creates), self.runs)
            for a in creates:
                self.items.append(Item(a.request.name, self.runs, self.life, a))
        return [a.request.name for a in creates]

    def _item_done(self, item: Item) -> None:
        self.items.remove(item)
        ended = not any(i.run == item.run for i in self.items)
        if self.cache is not None and item.life == self.life and ended:
            self.cache.settle(KEY, self.run_names[item.run], item.run)

    # --- the API and the world -------------------------------------------------------------
    def land(self, item: Item) -> None:
        """The create reaches the API."""
        if item.name in self.api:
            by = self.api[item.name][1]
            self.violations.append(f"{item.name} (lifetime {item.life}) exists, by {by}")
            self._item_done(item)  # AlreadyExists: the dispatch counts it as done
            return
        self.uids += 1
        self.api[item.name] = (f"u{self.uids}", item.life)
        self.watch.append(("ADDED", self.pod(item.name)))
        item.uid = f"u{self.uids}"

    def answer(self, item: Item) -> None:
        """The create's answer reaches the dispatch (its pod goes in the cache)."""
        if self.cache is not None and item.life == self.life:
            self.known.add(item.uid)
            self.cache.created(KEY, replace(item.replica, uid=item.uid), item.run)
        self._item_done(item)

    def refuse(self, item: Item) -> None:
        self.refusals -= 1
        self.failed_runs.add(item.run)
        self._item_done(item)

    def drop(self, item: Item) -> None:
        """Not sent: an earlier create of its run was refused."""
        self._item_done(item)

    def deliver(self) -> None:
        kind, replica = self.watch.popleft()
        self.known.add(replica.uid)
        if self.cache is not None:
            self.cache.pod_seen(KEY, replica, None, deleted=kind == "DELETED")

    def delete(self, name: str) -> None:
        """Someone deletes a pod (its node went away)."""
        self.deletions -= 1
        replica = self.pod(name)
        del self.api[name]
        self.watch.append(("DELETED", replica))

    def restart(self, landing: int) -> None:
        """The operator is killed: its cache, answers and watch are gone; of its requests on
        the wire those in the bit mask ``landing`` reach the API (before a new operator could
        list: it takes seconds to start), the others never do."""
        self.restarts -= 1
        unsent = [i for i in self.items if not i.uid]
        for bit, item in enumerate(unsent):
            if landing >> bit & 1:
                self.land(item)
        self.life += 1
        self.cache = None
        self.known = set()
        self.watch.clear()
        self.items = []

    def moves(self) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = [("pass", 0)]
        for n, item in enumerate(self.items):
            if not item.uid:
                out.append(("land", n))
                if self.refusals > 0:
                    out.append(("refuse", n))
                if item.run in self.failed_runs:
                    out.append(("drop", n))
            else:
                out.append(("answer", n))
        if self.watch:
            out.append(("deliver", 0))
        if self.deletions > 0:
            out += [("delete", n) for n in range(len(self.api))]
        if self.restarts > 0:
            unsent = sum(1 for i in self.items if not i.uid)
            out += [("restart", mask) for mask in range(2**unsent)]
        return out

    def apply(self, move: tuple[str, int]) -> None:
        what, n = move
        if what == "pass":
            self.pass_()
        elif what == "deliver":
            self.deliver()
        elif what == "restart":
            self.restart(n)
        elif what == "delete":
            self.delete(sorted(self.api)[n])
        else:
            getattr(self, what)(self.items[n])

    def signature(self) -> object:
        cache = None
        if self.cache is not None:
            entry = self.cache._entries.get(KEY)
            if entry is not None:
                cache = (
                    entry.primed_at is not None,
                    tuple(sorted((n, r.uid) for n, (r, _) in entry.pods.items())),
                    tuple(sorted((n, e.run) for n, e in entry.expected.items())),
                )
        return (
            self.life,
            cache,
            tuple(sorted(self.api.items())),
            tuple((i.name, i.run, i.life, i.uid, i.run in self.failed_runs) for i in self.items),
            tuple((k, r.name, r.uid) for k, r in self.watch),
            (self.refusals, self.deletions, self.restarts),
        )


def replay(path: list[tuple[str, int]]) -> World:
    world = World()
    for move in path:
        world.apply(move)
    return world


def settle_everything(world: World) -> None:
    """Drain what is in flight and run passes until one creates nothing (bounded)."""
    for _ in range(50):
        while world.items or world.watch:
            if world.watch:
                world.deliver()
            if world.items and world.items[0].uid:
                world.answer(world.items[0])
            elif world.items:
                world.land(world.items[0])
        if not world.pass_() and not world.items:
            return
    raise AssertionError("passes kept creating")


def test_no_interleaving_creates_a_replica_twice_or_loses_one() -> None:
    seen: set[object] = set()
    frontier: deque[list[tuple[str, int]]] = deque([[]])
    states = 0
    while frontier:
        path = frontier.popleft()
        world = replay(path)
        signature = world.signature()
        if signature in seen:
            continue
        seen.add(signature)
        states += 1
        assert not world.violations, (world.violations, path)
        end = replay(path)
        settle_everything(end)
        assert not end.violations, (end.violations, path)
        assert set(end.api) == WANTED, path
        for move in world.moves():
            frontier.append([*path, move])
    assert states > 1000  # the space really was explored
