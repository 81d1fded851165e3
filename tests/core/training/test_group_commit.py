"""Group commit, decided: no caller answers before a commit covering its target ended, the
callers that arrive while a commit is in flight all ride the next one (one sync for all), a
waiter is woken once, a failed commit leaves its waiters to ask again, a claim gets the slot
before the next waiter. Checked over every sequence of events up to a length, against a model
of the shells that drive it (``master.persistence``, ``rpc.aio_server``)."""

import itertools
from dataclasses import dataclass, field

import pytest

from flexjob.core.training.group_commit import CommitStep, GroupCommit

EVENTS = ("call", "ok", "fail", "claim", "wake")


@dataclass
class Model:
    """Drives a ``GroupCommit`` as the shells do: a call queues one line and asks with the
    position after it; the commit a leader starts writes every line queued then; callers a
    failed commit leaves ask again."""

    hand_over: bool = True
    group: GroupCommit[int] = field(init=False)
    appended: int = 0
    written: int = 0  # how far ended commits really wrote
    commit_covers: int | None = None  # the in-flight commit's position
    leader: int | None = None  # the caller (or claimant, negative) leading it
    targets: dict[int, int] = field(default_factory=dict)
    answered: set[int] = field(default_factory=set)
    waiting_since: dict[int, int] = field(default_factory=dict)  # caller: ends seen while waiting
    ends: int = 0
    claims: int = 0
    woken: list[int] = field(default_factory=list)  # told to ask again, not run yet

    def __post_init__(self) -> None:
        self.group = GroupCommit(hand_over=self.hand_over)

    def start(self, who: int) -> None:
        assert self.commit_covers is None, "two commits in flight"
        self.commit_covers, self.leader = self.appended, who
        if who >= 0:
            assert self.targets[who] <= self.appended  # its commit covers its own lines

    def answer(self, caller: int) -> None:
        assert caller not in self.answered, "answered twice"
        assert self.targets[caller] <= self.written, "answered before its lines were written"
        self.answered.add(caller)
        self.waiting_since.pop(caller, None)

    def ask(self, caller: int) -> None:
        step = self.group.ask(self.targets[caller], caller)
        if step is CommitStep.DONE:
            self.answer(caller)
        elif step is CommitStep.LEAD:
            self.start(caller)
        else:
            self.waiting_since.setdefault(caller, self.ends)

    def event(self, name: str) -> None:
        if name == "call":
            self.appended += 1
            caller = len(self.targets)
            self.targets[caller] = self.appended
            self.ask(caller)
        elif name == "claim":
            self.claims += 1
            if self.group.claim(-self.claims):
                self.start(-self.claims)
        elif name == "wake":
            if self.woken:  # a woken thread runs at last
                self.ask(self.woken.pop(0))
        elif self.commit_covers is not None:
            self.end(ok=name == "ok")

    def end(self, ok: bool) -> None:
        assert self.commit_covers is not None
        if ok:
            self.written = max(self.written, self.commit_covers)
        leader, self.commit_covers, self.leader = self.leader, None, None
        self.ends += 1
        ended = self.group.end(self.written if ok else None)
        released = [
            *ended.done,
            *ended.failed,
            *([ended.leader] if ended.leader is not None else []),
        ]
        assert len(released) == len(set(released)), "a waiter woken twice"
        if leader is not None and leader >= 0:
            if ok:
                self.answer(leader)
            else:
                self.ask(leader)  # its own commit failed: it asks again
        for caller in ended.done:
            self.answer(caller)
        if ended.leader is not None and ended.holds_slot:
            self.start(ended.leader)
        elif ended.leader is not None:
            self.woken.append(ended.leader)  # asks again once it runs
        for caller in ended.failed:
            self.waiting_since.pop(caller, None)
            self.ask(caller)

    def drain(self) -> None:
        for _ in range(2 * (len(self.targets) + self.claims) + 2):
            if self.woken:
                self.ask(self.woken.pop(0))
            elif self.commit_covers is not None:
                self.end(ok=True)
            else:
                return
        raise AssertionError("commits never stop")


def scripts(length: int) -> "itertools.chain[tuple[str, ...]]":
    return itertools.chain.from_iterable(
        itertools.product(EVENTS, repeat=n) for n in range(1, length + 1)
    )


@pytest.mark.parametrize("hand_over", [True, False], ids=["handed-over", "asks-again"])
def test_no_caller_answers_before_its_lines_are_written_and_none_is_left_waiting(
    hand_over: bool,
) -> None:
    checked = 0
    for script in scripts(7):
        model = Model(hand_over)
        for name in script:
            model.event(name)
        model.drain()
        assert model.answered == set(model.targets), script  # every caller answered once
        assert model.group.waiting == 0 and not model.group.in_flight
        checked += 1
    assert checked == sum(len(EVENTS) ** n for n in range(1, 8))


@pytest.mark.parametrize("hand_over", [True, False], ids=["handed-over", "asks-again"])
def test_callers_arriving_during_a_commit_all_ride_the_next_one(hand_over: bool) -> None:
    for script in scripts(7):
        if "fail" in script:
            continue
        model = Model(hand_over)
        for name in script:
            model.event(name)
            for caller, since in model.waiting_since.items():
                # written at the latest by the commit after the one in flight (a woken
                # thread that has not run yet answers once it does)
                covered = model.targets[caller] <= model.written
                assert covered or model.ends - since <= 1 + model.claims, (script, caller)


def test_one_commit_answers_every_caller_that_waited_for_it() -> None:
    group: GroupCommit[str] = GroupCommit()
    assert group.ask(1, "a") is CommitStep.LEAD  # no commit in flight: a writes line 1 (and more)
    assert [group.ask(t, w) for t, w in ((2, "b"), (3, "c"), (4, "d"))] == [CommitStep.WAIT] * 3
    first = group.end(1)  # a's commit wrote line 1 only: b leads the next, for c and d too
    assert (first.done, first.failed, first.leader) == ([], [], "b")
    second = group.end(4)
    assert (second.done, second.leader) == (["c", "d"], None)
    assert group.durable == 4 and not group.in_flight
    assert group.ask(4, "e") is CommitStep.DONE  # already durable: answers at once


def test_a_claim_takes_the_slot_before_the_next_waiter() -> None:
    group: GroupCommit[str] = GroupCommit()
    assert group.ask(1, "a") is CommitStep.LEAD
    assert group.ask(2, "b") is CommitStep.WAIT
    assert group.claim("rotation") is False
    assert group.claim() is False  # without a waiter: not remembered
    ended = group.end(1)
    assert ended.leader == "rotation" and ended.done == [] and group.in_flight
    assert group.end(2).done == ["b"]


def test_a_failed_commit_fails_its_uncovered_waiters_and_frees_the_slot() -> None:
    group: GroupCommit[str] = GroupCommit()
    group.ask(3, "a")
    group.ask(4, "b")
    ended = group.end(None)
    assert (ended.done, ended.failed, ended.leader) == ([], ["b"], None)
    assert group.durable == 0 and not group.in_flight


def test_ending_without_a_commit_in_flight_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="without a commit in flight"):
        GroupCommit[str]().end(1)


def test_without_hand_over_the_slot_is_free_for_whoever_asks_first() -> None:
    group: GroupCommit[str] = GroupCommit(hand_over=False)
    assert group.ask(1, "a") is CommitStep.LEAD
    assert group.ask(2, "b") is CommitStep.WAIT
    assert group.ask(3, "c") is CommitStep.WAIT
    ended = group.end(1)
    assert (ended.leader, ended.holds_slot, group.in_flight) == ("b", False, False)
    assert group.ask(4, "d") is CommitStep.LEAD  # d runs before the woken b: d leads
    assert group.ask(2, "b") is CommitStep.WAIT  # b, woken, asks again: d's commit covers it
    assert group.end(4).done == ["c", "b"]
