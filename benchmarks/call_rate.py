"""Calls per second from client threads over a fixed time: what the RPC rate benchmarks count.

``calls_per_second`` runs one ``calls(i)`` per thread, a generator that connects and then makes
one call for each item it yields; it counts the calls of ``seconds`` after ``warmup`` seconds,
and raises a thread's error once all have ended. ``add_rate_options`` adds the options those
benchmarks share (``--rounds``, ``--threads``, ``--seconds``), their defaults written here.
"""

import argparse
import contextlib
import threading
import time
from collections.abc import Callable, Generator


def add_rate_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=2.0)


def calls_per_second(
    calls: Callable[[int], Generator[object, None, None]],
    threads: int,
    seconds: float,
    warmup: float,
) -> float:
    counts = [0] * threads
    errors: list[BaseException] = []
    stop = threading.Event()

    def work(i: int) -> None:
        try:
            with contextlib.closing(calls(i)) as made:
                for _ in made:
                    counts[i] += 1
                    if stop.is_set():
                        return
        except BaseException as exc:  # raised below, in the main thread
            errors.append(exc)

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    time.sleep(warmup)
    first = sum(counts)
    time.sleep(seconds)
    done = sum(counts) - first
    stop.set()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]
    return done / seconds
