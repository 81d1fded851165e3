"""The call-rate loop of the RPC benchmarks: client threads calling a master as fast as they
can, counted after a warm-up, and two setups measured in alternating rounds.

``calls_per_second`` runs the threads; ``alternating_medians`` measures a setup and its
baseline in turn; ``add_rate_arguments`` adds the options they read (``--rounds``, ``--threads``,
``--seconds``). Used by ``metrics_overhead.py`` and ``node_credential.py``; not a benchmark.
"""

import argparse
import statistics
import threading
import time
from collections.abc import Callable

#: One client thread: ``work(i, stop, counts)`` connects, then calls until ``stop`` is set,
#: adding 1 to ``counts[i]`` per call.
Work = Callable[[int, threading.Event, list[int]], None]


def add_rate_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=2.0)


def calls_per_second(work: Work, threads: int, seconds: float, warm_up: float) -> float:
    """Calls per second of ``threads`` threads running ``work``, counted over ``seconds`` after
    ``warm_up`` seconds; the first error a thread raised is raised here, once all stopped."""
    counts = [0] * threads
    errors: list[BaseException] = []
    stop = threading.Event()

    def run(i: int) -> None:
        try:
            work(i, stop, counts)
        except BaseException as exc:  # raised below, in the calling thread
            errors.append(exc)

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    time.sleep(warm_up)
    first = sum(counts)
    time.sleep(seconds)
    calls = sum(counts) - first
    stop.set()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]
    return calls / seconds


def alternating_medians(
    rounds: int, first: Callable[[int], float], second: Callable[[int], float]
) -> tuple[float, float]:
    """The medians of ``first(r)`` and ``second(r)`` over ``rounds`` rounds, ``first`` run
    first in even rounds and last in odd ones (so a drift of the machine is shared)."""
    out: tuple[list[float], list[float]] = ([], [])
    order = [(first, out[0]), (second, out[1])]
    for r in range(rounds):
        for run, results in order if r % 2 == 0 else order[::-1]:
            results.append(run(r))
    return statistics.median(out[0]), statistics.median(out[1])
