"""The CartPole actor-critic, its weights on the wire, and one PPO update.

Plain PyTorch: a collector acts with ``act``, computes advantages with ``gae``; a learner runs
``ppo_update`` on a batch; weights travel as lists of floats (``to_wire``/``from_wire``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

OBS, ACTIONS, HIDDEN = 4, 2, 64


class ActorCritic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pi = nn.Sequential(
            nn.Linear(OBS, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(),
            nn.Linear(HIDDEN, ACTIONS),
        )  # fmt: skip
        self.v = nn.Sequential(
            nn.Linear(OBS, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, HIDDEN), nn.Tanh(),
            nn.Linear(HIDDEN, 1),
        )  # fmt: skip

    def dist(self, obs: torch.Tensor) -> torch.distributions.Categorical:
        return torch.distributions.Categorical(logits=self.pi(obs))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.v(obs).squeeze(-1)


def to_wire(model: nn.Module) -> dict[str, list[float]]:
    return {k: v.flatten().tolist() for k, v in model.state_dict().items()}


def from_wire(model: nn.Module, weights: dict[str, list[float]]) -> None:
    state = {
        k: torch.tensor(weights[k], dtype=v.dtype).view_as(v) for k, v in model.state_dict().items()
    }
    model.load_state_dict(state)


def average_wire(parts: list[dict[str, list[float]]], sizes: list[int]) -> dict[str, Any]:
    """Weights averaged over ``parts``, each weighted by its share of the samples."""
    total = float(sum(sizes))
    out: dict[str, Any] = {}
    for key in parts[0]:
        stacked = torch.stack(
            [torch.tensor(p[key]) * (n / total) for p, n in zip(parts, sizes, strict=True)]
        )
        out[key] = stacked.sum(0).tolist()
    return out


def gae(
    rewards: list[float], values: list[float], dones: list[bool], last_value: float,
    gamma: float = 0.99, lam: float = 0.95,
) -> tuple[list[float], list[float]]:  # fmt: skip
    """Advantages and returns (generalised advantage estimation) of one rollout."""
    adv = [0.0] * len(rewards)
    running = 0.0
    for t in reversed(range(len(rewards))):
        next_value = last_value if t == len(rewards) - 1 else values[t + 1]
        nonterminal = 0.0 if dones[t] else 1.0
        delta = rewards[t] + gamma * next_value * nonterminal - values[t]
        running = delta + gamma * lam * nonterminal * running
        adv[t] = running
    return adv, [a + v for a, v in zip(adv, values, strict=True)]


def ppo_update(
    model: ActorCritic, optimizer: torch.optim.Optimizer, batch: dict[str, list[Any]],
    epochs: int = 4, minibatch: int = 256, clip: float = 0.2,
) -> dict[str, float]:  # fmt: skip
    """One PPO update (clipped surrogate + value loss) over ``batch``; returns the last losses."""
    obs = torch.tensor(batch["obs"], dtype=torch.float32)
    act = torch.tensor(batch["act"])
    old_logp = torch.tensor(batch["logp"])
    adv = torch.tensor(batch["adv"])
    ret = torch.tensor(batch["ret"])
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    n = len(obs)
    stats = {"policy_loss": 0.0, "value_loss": 0.0}
    for _ in range(epochs):
        for idx in torch.randperm(n).split(minibatch):
            dist = model.dist(obs[idx])
            ratio = torch.exp(dist.log_prob(act[idx]) - old_logp[idx])
            surrogate = torch.min(
                ratio * adv[idx], torch.clamp(ratio, 1 - clip, 1 + clip) * adv[idx]
            )
            policy_loss = -surrogate.mean() - 0.01 * dist.entropy().mean()
            value_loss = ((model.value(obs[idx]) - ret[idx]) ** 2).mean()
            optimizer.zero_grad()
            (policy_loss + 0.5 * value_loss).backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            stats = {"policy_loss": policy_loss.item(), "value_loss": value_loss.item()}
    return stats
