"""A learner: trains the actor-critic with PPO on the batches the coordinator (or an
aggregator) sends, starting from the weights it is given, and answers with the new weights.
Serves ``/train`` on ``LEARNER_PORT`` until it is stopped. A logic learner (``FLEXJOB_GPU``
above 1, from its ``nvidia.com/gpu``) runs one learner process per GPU, on ``LEARNER_PORT``
and the ports after it: what the server lists to its aggregator."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import torch
from policy import ActorCritic, from_wire, ppo_update, to_wire
from wire import Json, port, run_role

LR = 1e-3


class Learner:
    def __init__(self) -> None:
        self.model = ActorCritic()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=LR)
        self.version = 0
        self.lock = threading.Lock()

    def train(self, body: Json) -> Json:
        with self.lock:
            from_wire(self.model, body["weights"])  # the latest (averaged, behind an aggregator)
            stats = ppo_update(self.model, self.optimizer, body["batch"])
            self.version = body["version"] + 1
            return {"weights": to_wire(self.model), "version": self.version, **stats}


def start_gpu_processes(gpus: int) -> list[subprocess.Popen[bytes]]:
    """The learner processes for GPUs 1.. of a logic learner, on the ports after ours."""
    procs = []
    for k in range(1, gpus):
        env = {**os.environ, "LEARNER_PORT": str(port("LEARNER_PORT") + k), "FLEXJOB_GPU": "1"}
        procs.append(subprocess.Popen([sys.executable, __file__], env=env))
    return procs


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    others = start_gpu_processes(int(os.environ.get("FLEXJOB_GPU") or 1))
    run_role("LEARNER_PORT", {"/train": Learner().train}, lambda: [p.terminate() for p in others])


if __name__ == "__main__":
    main()
