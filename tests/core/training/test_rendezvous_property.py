"""Property: under any sequence of joins, deaths and time passing, every world respects the
bounds and the node unit, ranks follow join age, rounds count up by one, and once the last call
has passed no completable round is left waiting (or, beside a healthy world, its members are
told to re-join)."""

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from flexjob.core.training.rendezvous import Rendezvous, RendezvousConfig, World
from tests.core.clock import FakeClock

NODES = tuple(f"n{i}" for i in range(8))
LAST_CALL = 5.0


@st.composite
def configs(draw: st.DrawFn) -> RendezvousConfig:
    lo = draw(st.integers(1, 4))
    hi = draw(st.integers(lo, 7))
    unit = draw(st.integers(1, hi))
    return RendezvousConfig(lo, hi, unit, LAST_CALL)


class RendezvousMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.r: Rendezvous | None = None
        self.first_join: dict[str, int] = {}
        self.seq = 0
        self.worlds: list[World] = []

    @precondition(lambda self: self.r is None)
    @rule(config=configs())
    def start(self, config: RendezvousConfig) -> None:
        self.r = Rendezvous(config, prefix="p", clock=self.clock)

    @precondition(lambda self: self.r is not None)
    @rule(node=st.sampled_from(NODES))
    def join(self, node: str) -> None:
        assert self.r is not None
        if node not in self.first_join:
            self.first_join[node] = self.seq
            self.seq += 1
        self.r.join(node)
        self._record()

    @precondition(lambda self: self.r is not None)
    @rule(node=st.sampled_from(NODES))
    def die(self, node: str) -> None:
        assert self.r is not None
        self.r.remove(node)
        self.first_join.pop(node, None)
        self._record()

    @precondition(lambda self: self.r is not None)
    @rule(seconds=st.sampled_from([1.0, LAST_CALL]))
    def time_passes(self, seconds: float) -> None:
        assert self.r is not None
        self.clock.advance(seconds)
        self.r.tick()
        self._record()

    def _record(self) -> None:
        assert self.r is not None
        world = self.r.world
        if world is not None and (not self.worlds or self.worlds[-1] != world):
            self.worlds.append(world)
            members = list(world.members)
            assert members == sorted(members, key=self.first_join.__getitem__), "rank by age"

    @invariant()
    def worlds_respect_bounds_and_unit(self) -> None:
        if self.r is None:
            return
        cfg = self.r.config
        for w in self.worlds:
            assert cfg.min_nodes <= len(w.members) <= cfg.max_nodes
            assert len(w.members) % cfg.node_unit == 0
            assert len(set(w.members)) == len(w.members)

    @invariant()
    def rounds_count_up_by_one_with_fresh_prefixes(self) -> None:
        assert [w.round for w in self.worlds] == list(range(1, len(self.worlds) + 1))
        assert len({w.store_prefix for w in self.worlds}) == len(self.worlds)

    @invariant()
    def a_full_round_never_waits(self) -> None:
        if self.r is None or (self.r.world is not None and not self.r.broken):
            return  # beside a healthy world, newcomers wait for its members to re-join
        n = len(self.r.waiting)
        assert not (n >= self.r.config.max_nodes and self.r.config.world_size_for(n) > 0)

    @precondition(lambda self: self.r is not None)
    @rule()
    def after_the_last_call_nothing_completable_waits(self) -> None:
        assert self.r is not None
        self.clock.advance(LAST_CALL)
        self.r.tick()  # starts the last call if it was not running
        self.clock.advance(LAST_CALL)
        self.r.tick()
        self._record()
        cfg, world = self.r.config, self.r.world
        if world is None or self.r.broken:
            assert cfg.world_size_for(len(self.r.waiting)) == 0
        else:  # a healthy world runs: no second world; its members are asked to re-join
            everyone = len(self.r.waiting | set(world.members))
            if cfg.world_size_for(everyone) > len(world.members):
                assert self.r.num_nodes_waiting() > 0


RendezvousMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None
)
test_rendezvous_rounds_are_well_formed = RendezvousMachine.TestCase
