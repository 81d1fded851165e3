"""The coordinator: asks the flexjob server for a learner and collectors (DI-engine's
``OperatorServer`` protocol), hands out work — the latest policy to every collector, the
collected steps to the learner — and sizes the collectors by the learner: one more when the
learner waited on data, one back when it did not. Ends (exit 0) when the average return of the
last 100 episodes reaches the target, printing the time it took and the collector count over
time; exits 1 when ``--max-seconds`` pass first.

Started alone by the operator (a DIJob v1's coordinator); collectors and learners exist only
as it asks for them. A collector that dies is dropped; the one the operator recreates in its
place is used again once the server lists it.
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import torch
from policy import ActorCritic, to_wire
from wire import DiServer, Json, call, port, serve, wait_serving


@dataclass
class Shared:
    """What the coordinator's threads share: the latest policy and the collected steps."""

    weights: Json
    version: int = 0
    batches: queue.Queue[Json] = field(default_factory=queue.Queue)
    collectors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


def drive_collector(shared: Shared, address: str, steps: int) -> None:
    """Send the latest policy to the collector at ``address`` and queue what it collects,
    until the server no longer lists it or the job ends."""
    try:
        wait_serving(address, timeout=120)
    except OSError:
        return
    while not shared.stop.is_set() and address in shared.collectors:
        try:
            work = {"weights": shared.weights, "version": shared.version, "steps": steps}
            out = call(address, "/collect", work)
        except OSError:
            time.sleep(0.5)  # gone: replaced or removed; the listing decides
            continue
        shared.batches.put(out)


@dataclass
class Scaler:
    """One more collector when the learner waited on data for more than ``up`` of the time
    since the last change, one back when it waited less than ``down`` of it."""

    server: DiServer
    low: int
    high: int
    wanted: int = 1
    up: float = 0.4
    down: float = 0.1
    waited: float = 0.0
    busy: float = 0.0
    updates: int = 0
    trace: list[tuple[float, int]] = field(default_factory=list)

    def record(self, waited: float, busy: float, now: float) -> None:
        self.waited, self.busy, self.updates = (
            self.waited + waited,
            self.busy + busy,
            self.updates + 1,
        )
        if self.updates < 3:
            return
        share = self.waited / max(self.waited + self.busy, 1e-9)
        step = 1 if share > self.up and self.wanted < self.high else 0
        step = -1 if share < self.down and self.wanted > self.low else step
        if step:
            self.server.scale(step, collectors=1)
            self.wanted += step
            self.trace.append((now, self.wanted))
            print(f"learner waited {share:.0%}: collectors -> {self.wanted}", flush=True)
        self.waited = self.busy = 0.0
        self.updates = 0


def refresh(
    server: DiServer, shared: Shared, steps: int, threads: dict[str, threading.Thread]
) -> Json:
    listed = server.replicas()
    shared.collectors = list(listed["collectors"])
    for address in shared.collectors:
        if address not in threads or not threads[address].is_alive():
            threads[address] = threading.Thread(
                target=drive_collector, args=(shared, address, steps), daemon=True
            )
            threads[address].start()
    return listed


def learner_address(listed: Json) -> str | None:
    """The learner to train with: the aggregator of a logic learner, else the learner."""
    chosen = listed["aggregators"] or listed["learners"]
    return chosen[0] if chosen else None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--target", type=float, default=195.0, help="Average return to reach.")
    p.add_argument("--episodes", type=int, default=100, help="Episodes the average is over.")
    p.add_argument("--batch-steps", type=int, default=2048, help="Steps per PPO update.")
    p.add_argument("--collect-steps", type=int, default=256, help="Steps per collector call.")
    p.add_argument("--max-collectors", type=int, default=4)
    p.add_argument("--learner-gpus", type=int, default=0, help=">1: a logic learner.")
    p.add_argument("--max-seconds", type=float, default=600)
    a = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    serve(port("COORDINATOR_PORT"), {"/ping": lambda _: {}})
    server = DiServer()
    start = time.monotonic()
    server.scale(+1, collectors=1, learners=1, gpus=a.learner_gpus)
    shared = Shared(weights=to_wire(ActorCritic()))
    scaler = Scaler(server, low=1, high=a.max_collectors, trace=[(0.0, 1)])
    threads: dict[str, threading.Thread] = {}
    returns: deque[float] = deque(maxlen=a.episodes)
    last_refresh = 0.0
    learner = None
    while time.monotonic() - start < a.max_seconds:
        if time.monotonic() - last_refresh > 1.0 or learner is None:
            learner = learner_address(refresh(server, shared, a.collect_steps, threads))
            last_refresh = time.monotonic()
            if learner is None:
                time.sleep(0.2)
                continue
            try:
                wait_serving(learner, timeout=10)
            except OSError:  # not reachable (yet): the server may name it otherwise now
                learner = None  # (a pod listed before it had an IP: its Service's name)
                continue
        waited_from, steps = time.monotonic(), 0
        batch: Json = {key: [] for key in ("obs", "act", "logp", "adv", "ret")}
        while steps < a.batch_steps:
            try:
                out = shared.batches.get(timeout=1.0)
            except queue.Empty:
                learner = learner_address(refresh(server, shared, a.collect_steps, threads))
                continue
            returns.extend(out["episodes"])
            if out["version"] < shared.version - 1:
                continue  # too stale for PPO's ratio
            for key in batch:
                batch[key].extend(out[key])
            steps += len(out["act"])
        waited = time.monotonic() - waited_from
        if len(returns) == a.episodes and statistics.fmean(returns) >= a.target:
            break
        trained_from = time.monotonic()
        try:
            work = {"weights": shared.weights, "version": shared.version, "batch": batch}
            answer = call(learner, "/train", work)
        except OSError:
            learner = None  # the learner went away; the operator brings it back
            continue
        shared.weights, shared.version = answer["weights"], answer["version"]
        now = time.monotonic() - start
        scaler.record(waited, time.monotonic() - trained_from, now)
        mean = statistics.fmean(returns) if returns else 0.0
        print(
            f"t={now:.1f}s update={shared.version} avg_return={mean:.1f} "
            f"episodes={len(returns)} collectors={len(shared.collectors)} "
            f"learner_processes={answer.get('learners', 1)}",
            flush=True,
        )
    shared.stop.set()
    elapsed = time.monotonic() - start
    mean = statistics.fmean(returns) if returns else 0.0
    trace = " ".join(f"{t:.1f}s:{n}" for t, n in scaler.trace)
    print(f"collectors over time: {trace}", flush=True)
    if len(returns) == a.episodes and mean >= a.target:
        print(f"reached average return {mean:.1f} over {a.episodes} episodes "
              f"in {elapsed:.1f} s with {shared.version} updates", flush=True)  # fmt: skip
        os._exit(0)
    print(
        f"average return {mean:.1f} after {elapsed:.1f} s: target {a.target} not reached",
        flush=True,
    )
    os._exit(1)


if __name__ == "__main__":
    main()
