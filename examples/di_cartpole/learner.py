"""A learner: trains the actor-critic with PPO on the batches the coordinator (or an
aggregator) sends, starting from the weights it is given, and answers with the new weights.
Serves ``/train`` on ``LEARNER_PORT`` until it is stopped."""

from __future__ import annotations

import os
import signal
import threading

import torch
from policy import ActorCritic, from_wire, ppo_update, to_wire
from wire import Json, port, serve

LR = 1e-3


class Learner:
    def __init__(self) -> None:
        self.model = ActorCritic()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=LR)
        self.version = -1
        self.lock = threading.Lock()

    def train(self, body: Json) -> Json:
        with self.lock:
            if body["version"] != self.version:  # a new learner, or one behind an aggregator
                from_wire(self.model, body["weights"])
            stats = ppo_update(self.model, self.optimizer, body["batch"])
            self.version = body["version"] + 1
            return {"weights": to_wire(self.model), "version": self.version, **stats}


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    learner = Learner()
    serve(port("LEARNER_PORT"), {"/train": learner.train, "/ping": lambda _: {}})
    print(f"{os.environ.get('KUBERNETES_POD_NAME')}: serving on {port('LEARNER_PORT')}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()


if __name__ == "__main__":
    main()
