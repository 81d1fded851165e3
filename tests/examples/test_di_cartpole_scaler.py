"""examples/di_cartpole's scaling rule, as its coordinator applies it: one more collector when
the learner waited on data for more than 40% of the time since the last change, one back when
it waited less than 10%, within 1..max, judged over at least 3 updates."""

import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "di_cartpole"
pytest.importorskip("gymnasium", reason="examples/di_cartpole: [examples] extra")
sys.path.insert(0, str(EXAMPLE))  # the example's own modules import each other by name
try:
    from coordinator import Scaler
finally:
    sys.path.remove(str(EXAMPLE))


class Server:
    """Records what the coordinator asks the flexjob server for."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def scale(self, sign: int, collectors: int = 0, **_: Any) -> dict[str, Any]:
        self.asked.append(sign * collectors)
        return {}


def run(scaler: Scaler, waited: float, busy: float, updates: int = 3) -> None:
    for _ in range(updates):
        scaler.record(waited, busy, now=0.0)


def test_a_learner_waiting_on_data_gets_collectors_up_to_the_maximum() -> None:
    server = Server()
    scaler = Scaler(server, low=1, high=3)  # type: ignore[arg-type]
    run(scaler, waited=1.0, busy=1.0, updates=2)
    assert server.asked == []  # fewer than 3 updates: no judgement yet
    run(scaler, waited=1.0, busy=1.0, updates=1)
    assert server.asked == [1]
    for _ in range(3):
        run(scaler, waited=1.0, busy=1.0)
    assert server.asked == [1, 1] and scaler.wanted == 3  # never above high


def test_a_learner_that_never_waits_gives_collectors_back_down_to_one() -> None:
    server = Server()
    scaler = Scaler(server, low=1, high=4, wanted=3)  # type: ignore[arg-type]
    run(scaler, waited=0.01, busy=1.0)
    assert server.asked == [-1] and scaler.wanted == 2
    run(scaler, waited=0.2, busy=1.0)  # waited 17%: between the thresholds, no change
    assert server.asked == [-1]
    for _ in range(3):
        run(scaler, waited=0.0, busy=1.0)
    assert server.asked == [-1, -1] and scaler.wanted == 1  # never below low
    assert [n for _, n in scaler.trace] == [2, 1]
