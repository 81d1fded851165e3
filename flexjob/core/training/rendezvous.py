"""Rendezvous for elastic all-reduce: which nodes form the world of each round, and their ranks.

Nodes ``join``; a round completes when ``max_nodes`` are waiting, or at least ``min_nodes`` are
and the last-call timeout has passed since the ``min_nodes``-th one arrived, or — after a world
broke — as soon as every live member of that world has re-joined. While a world runs
unbroken, no round completes (waiting nodes would otherwise form a second, split world).
The world is rounded down to a multiple of ``node_unit``; the oldest nodes (by first join) are
taken, and ranks follow the same age order, so the oldest surviving node is rank 0 and can
broadcast the model. A member's death or re-join breaks the world; a waiting node that would
grow the world is announced by ``num_nodes_waiting`` so running nodes re-join. No I/O; the
clock is injected.
"""

import time
from collections.abc import Callable
from dataclasses import KW_ONLY, InitVar, dataclass, field
from enum import StrEnum


class NodeStatus(StrEnum):
    """A node's place in the rendezvous: UNKNOWN → WAITING → MEMBER → WAITING (re-join) …"""

    UNKNOWN = "unknown"
    WAITING = "waiting"
    MEMBER = "member"


@dataclass(frozen=True, slots=True)
class RendezvousConfig:
    min_nodes: int = 1
    max_nodes: int = 1
    node_unit: int = 1
    last_call_timeout: float = 1.0

    def __post_init__(self) -> None:
        if self.min_nodes < 1:
            raise ValueError(f"min_nodes must be >= 1, got {self.min_nodes}")
        if self.max_nodes < self.min_nodes:
            raise ValueError(
                f"max_nodes must be >= min_nodes ({self.min_nodes}), got {self.max_nodes}"
            )
        if self.node_unit < 1 or self.node_unit > self.max_nodes:
            raise ValueError(
                f"node_unit must be between 1 and max_nodes ({self.max_nodes}), "
                f"got {self.node_unit}"
            )
        if self.last_call_timeout < 0:
            raise ValueError(f"last_call_timeout must be >= 0, got {self.last_call_timeout}")

    def world_size_for(self, candidates: int) -> int:
        """How many of ``candidates`` nodes a round takes (0: not enough for a round)."""
        size = min(candidates, self.max_nodes) // self.node_unit * self.node_unit
        return size if size >= self.min_nodes else 0


@dataclass(frozen=True, slots=True)
class World:
    """A completed round: members in rank order, and the store key prefix of this round."""

    round: int
    members: tuple[str, ...]
    store_prefix: str

    def rank_of(self, node_id: str) -> int:
        return self.members.index(node_id) if node_id in self.members else -1


@dataclass(frozen=True, slots=True)
class WorldView:
    """What one node sees: ``complete`` once it is a member of the latest world."""

    complete: bool
    round: int
    rank: int
    world: World | None


@dataclass(eq=False)
class Rendezvous:
    """Rounds of rendezvous. Call ``tick()`` (or any query) to let time-based rounds complete.
    ``prefix`` starts each world's store prefix."""

    config: RendezvousConfig
    _: KW_ONLY
    prefix: str = "flexjob"
    clock: Callable[[], float] = time.monotonic
    first_round: InitVar[int] = 0
    _round: int = field(default=0, init=False)
    _world: World | None = field(default=None, init=False)
    _broken: bool = field(default=False, init=False)
    _waiting: set[str] = field(default_factory=set, init=False)
    _age: dict[str, int] = field(default_factory=dict, init=False)
    _next_age: int = field(default=0, init=False)
    _last_call_since: float | None = field(default=None, init=False)
    _version: int = field(default=0, init=False)

    def __post_init__(self, first_round: int) -> None:
        self._round = first_round

    @property
    def version(self) -> int:
        """Grows with every change to what ``to_dict()`` returns."""
        return self._version

    @property
    def round(self) -> int:
        """The latest completed round (0 before the first)."""
        return self._round

    @property
    def world(self) -> World | None:
        return self._world

    @property
    def waiting(self) -> frozenset[str]:
        return frozenset(self._waiting)

    @property
    def broken(self) -> bool:
        """A member of the latest world died or re-joined: the next round replaces it."""
        return self._broken

    def status(self, node_id: str) -> NodeStatus:
        if node_id in self._waiting:
            return NodeStatus.WAITING
        if self._world is not None and node_id in self._world.members:
            return NodeStatus.MEMBER
        return NodeStatus.UNKNOWN

    def join(self, node_id: str) -> int:
        """``node_id`` waits for the next round; returns that round's number. A member that
        re-joins leaves its world, which is then broken."""
        if node_id not in self._age:
            self._age[node_id] = self._next_age
            self._next_age += 1
            self._version += 1
        if self._world is not None and node_id in self._world.members:
            self._broken = True
        self._waiting.add(node_id)
        self.tick()
        return self._round + 1 if node_id in self._waiting else self._round

    def remove(self, node_id: str) -> None:
        """``node_id`` is dead: it leaves the waiting set and breaks its world."""
        self._waiting.discard(node_id)
        if self._age.pop(node_id, None) is not None:
            self._version += 1
        if self._world is not None and node_id in self._world.members:
            self._broken = True
        self.tick()

    def view(self, node_id: str) -> WorldView:
        self.tick()
        if node_id in self._waiting or self._world is None:
            return WorldView(False, self._round + 1, -1, None)
        rank = self._world.rank_of(node_id)
        return WorldView(rank >= 0, self._round, rank, self._world if rank >= 0 else None)

    def num_nodes_waiting(self) -> int:
        """> 0 tells running members to re-join: the world is broken, or waiting nodes would
        make the next world bigger."""
        self.tick()
        if self._broken:
            return max(1, len(self._waiting))
        if not self._waiting:
            return 0
        if self._world is None:
            return len(self._waiting)
        candidates = len(self._waiting | set(self._world.members))
        return (
            len(self._waiting)
            if self.config.world_size_for(candidates) > len(self._world.members)
            else 0
        )

    def tick(self) -> World | None:
        """Complete a round if its conditions hold; returns the new world if one formed."""
        n = len(self._waiting)
        if self._world is not None and not self._broken:
            # A healthy world is running: waiting nodes get in when its members re-join
            # (they see num_nodes_waiting); a round of the newcomers alone would split it.
            return None
        if n < self.config.min_nodes:
            self._last_call_since = None
            return None
        now = self.clock()
        if self._last_call_since is None:
            self._last_call_since = now
        size = self.config.world_size_for(n)
        if size == 0:
            return None
        if (
            n < self.config.max_nodes
            and not self._everyone_back()
            and now - self._last_call_since < self.config.last_call_timeout
        ):
            return None
        members = tuple(sorted(self._waiting, key=self._age.__getitem__)[:size])
        self._round += 1
        self._world = World(self._round, members, f"{self.prefix}/round-{self._round}/")
        self._waiting.difference_update(members)
        self._broken = False
        self._last_call_since = None
        self._version += 1
        return self._world

    def _everyone_back(self) -> bool:
        """A broken world whose every live member has re-joined need not wait for the last
        call: nobody else is coming back (dead and failed nodes were removed)."""
        if self._world is None or not self._broken:
            return False
        alive = {m for m in self._world.members if m in self._age}
        return alive <= self._waiting

    # ---- persistence: enough for a restarted master to keep rounds and ranks ----
    def to_dict(self) -> dict[str, object]:
        return {
            "round": self._round,
            "members": list(self._world.members) if self._world else [],
            "ages": dict(self._age),
        }

    def restore(self, round_: int, members: list[str], ages: dict[str, int]) -> None:
        """Continue after ``round_`` with ``members`` as its world; waiting nodes are lost."""
        self._round = round_
        self._age = {str(k): int(v) for k, v in ages.items()}
        self._next_age = max(self._age.values(), default=-1) + 1
        self._world = (
            World(round_, tuple(members), f"{self.prefix}/round-{round_}/") if members else None
        )
        self._waiting.clear()
        self._broken = False
        self._last_call_since = None
        self._version += 1
