"""Property: under any interleaving of get / report / worker death / straggler timeout /
checkpoint+restore, every sample index of every epoch is counted done exactly once."""

from collections import Counter

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from flexjob.core.shards import ReportResult, Shard, ShardManager
from flexjob.core.splitters import FileRange, FileSplitter, RangeSplitter, Splitter
from tests.core.clock import FakeClock

WORKERS = ("w0", "w1", "w2")
TIMEOUT = 10.0

splitters = st.one_of(
    st.builds(
        RangeSplitter,
        size=st.integers(1, 40),
        shard_size=st.integers(1, 9),
        shuffle=st.booleans(),
        seed=st.integers(0, 3),
    ),
    st.builds(
        FileSplitter,
        files=st.lists(st.integers(1, 12), min_size=1, max_size=4).map(
            lambda rows: tuple(FileRange(f"f{i}", 2, 2 + n) for i, n in enumerate(rows))
        ),
        shard_size=st.integers(1, 5),
        shuffle=st.booleans(),
        seed=st.integers(0, 3),
    ),
)


class ShardMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.mgr: ShardManager | None = None
        self.splitter: Splitter | None = None
        self.epochs = 1
        self.held: dict[str, list[Shard]] = {w: [] for w in WORKERS}
        self.counted: Counter[tuple[int, int]] = Counter()

    def _new_manager(self) -> ShardManager:
        assert self.splitter is not None
        return ShardManager(
            self.splitter, epochs=self.epochs, slow_shard_timeout=TIMEOUT, clock=self.clock
        )

    @precondition(lambda self: self.mgr is None)
    @rule(splitter=splitters, epochs=st.integers(1, 3))
    def start(self, splitter: Splitter, epochs: int) -> None:
        self.splitter, self.epochs = splitter, epochs
        self.mgr = self._new_manager()

    @precondition(lambda self: self.mgr is not None)
    @rule(worker=st.sampled_from(WORKERS))
    def get(self, worker: str) -> None:
        assert self.mgr is not None
        shard = self.mgr.get_shard(worker)
        if shard is not None:
            self.held[worker].append(shard)

    @precondition(lambda self: self.mgr is not None)
    @rule(worker=st.sampled_from(WORKERS), pick=st.integers(0, 100))
    def report(self, worker: str, pick: int) -> None:
        assert self.mgr is not None
        if not self.held[worker]:
            return
        self.report_one(worker, self.held[worker].pop(pick % len(self.held[worker])))

    @precondition(lambda self: self.mgr is not None)
    @rule(worker=st.sampled_from(WORKERS))
    def die(self, worker: str) -> None:
        assert self.mgr is not None
        self.mgr.recover(worker)
        self.held[worker] = []

    @precondition(lambda self: self.mgr is not None)
    @rule(seconds=st.sampled_from([1.0, TIMEOUT + 1]))
    def time_passes(self, seconds: float) -> None:
        assert self.mgr is not None
        self.clock.advance(seconds)
        self.mgr.expire_slow_shards()

    @precondition(lambda self: self.mgr is not None)
    @rule()
    def master_restarts(self) -> None:
        assert self.mgr is not None
        text = self.mgr.checkpoint()
        self.mgr = self._new_manager()
        self.mgr.restore(text)

    @invariant()
    def nothing_counted_twice(self) -> None:
        assert all(n == 1 for n in self.counted.values())

    def teardown(self) -> None:
        if self.mgr is None:
            return
        # Survivors (who still hold shards they will report late) and a fresh worker finish.
        for worker, shards in self.held.items():
            for shard in shards:
                self.report_one(worker, shard)
        for _ in range(10_000):
            shard = self.mgr.get_shard("finisher")
            if shard is None:
                break
            self.report_one("finisher", shard)
        assert self.mgr.finished
        assert self.splitter is not None
        expected = {(e, i) for e in range(self.epochs) for i in range(self.splitter.num_samples)}
        assert set(self.counted) == expected
        self.nothing_counted_twice()

    def report_one(self, worker: str, shard: Shard) -> None:
        assert self.mgr is not None
        if self.mgr.report_done(shard.shard_id, worker) is ReportResult.COUNTED:
            for index in shard.spec.sample_indices():
                self.counted[(shard.epoch, index)] += 1


ShardMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)
test_every_sample_of_every_epoch_is_done_exactly_once = ShardMachine.TestCase
