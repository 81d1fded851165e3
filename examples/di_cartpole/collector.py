"""A collector: runs CartPole episodes with the policy the coordinator sends and answers with
the trajectory (observations, actions, log-probabilities, advantages, returns) and the returns
of the episodes that ended. Serves ``/collect`` on ``COLLECTOR_PORT`` until it is stopped."""

from __future__ import annotations

import os
import threading

import gymnasium as gym
import torch
from policy import ActorCritic, from_wire, gae
from wire import Json, run_role


class Collector:
    def __init__(self, seed: int) -> None:
        self.env = gym.make("CartPole-v1")
        self.obs, _ = self.env.reset(seed=seed)
        self.episode_return = 0.0
        self.model = ActorCritic()
        self.version = -1
        self.lock = threading.Lock()

    def collect(self, body: Json) -> Json:
        with self.lock, torch.no_grad():
            if body["version"] != self.version:
                from_wire(self.model, body["weights"])
                self.version = body["version"]
            out: Json = {"obs": [], "act": [], "logp": [], "episodes": []}
            rewards, values, dones = [], [], []
            for _ in range(body["steps"]):
                obs = torch.tensor(self.obs, dtype=torch.float32)
                dist = self.model.dist(obs)
                action = dist.sample()
                out["obs"].append(self.obs.tolist())
                out["act"].append(int(action))
                out["logp"].append(float(dist.log_prob(action)))
                values.append(float(self.model.value(obs)))
                self.obs, reward, terminated, truncated, _ = self.env.step(int(action))
                self.episode_return += float(reward)
                rewards.append(float(reward))
                done = terminated or truncated
                dones.append(done)
                if done:
                    out["episodes"].append(self.episode_return)
                    self.episode_return = 0.0
                    self.obs, _ = self.env.reset()
                if truncated and not terminated:  # a cut episode: bootstrap as if it went on
                    rewards[-1] += 0.99 * values[-1]
            last = float(self.model.value(torch.tensor(self.obs, dtype=torch.float32)))
            out["adv"], out["ret"] = gae(rewards, values, dones, last)
            out["version"] = self.version
            return out


def main() -> None:
    torch.set_num_threads(1)
    name = os.environ.get("KUBERNETES_POD_NAME", "collector")
    run_role("COLLECTOR_PORT", {"/collect": Collector(seed=sum(map(ord, name))).collect})


if __name__ == "__main__":
    main()
