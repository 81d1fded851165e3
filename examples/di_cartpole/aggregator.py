"""An aggregator: the front of a logic learner. It asks the flexjob server which learner
processes it serves (``GET ?aggregator=<its name>``, DI-engine's protocol), splits each batch
the coordinator sends among them, has each train on its share from the same weights, and
answers with their weights averaged by share. Serves ``/train`` on ``AGGREGATOR_PORT``."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

from policy import average_wire
from wire import DiServer, Json, call, run_role, wait_serving


class Aggregator:
    def __init__(self, server: DiServer) -> None:
        self.server = server
        self.pool = ThreadPoolExecutor(max_workers=8)

    def learners(self) -> list[str]:
        served: list[str] = self.server.replicas()["learners"]
        for address in served:
            wait_serving(address)
        return served

    def train(self, body: Json) -> Json:
        learners = self.learners()
        batch, n = body["batch"], len(body["batch"]["act"])
        bounds = [n * k // len(learners) for k in range(len(learners) + 1)]
        parts = [
            {key: values[lo:hi] for key, values in batch.items()}
            for lo, hi in itertools.pairwise(bounds)
        ]
        work = [{**body, "batch": part} for part in parts]
        answers = list(self.pool.map(lambda a, w: call(a, "/train", w), learners, work))
        sizes = [len(part["act"]) for part in parts]
        weights = average_wire([a["weights"] for a in answers], sizes)
        return {"weights": weights, "version": body["version"] + 1, "learners": len(learners)}


def main() -> None:
    run_role("AGGREGATOR_PORT", {"/train": Aggregator(DiServer(worker_type="aggregator")).train})


if __name__ == "__main__":
    main()
