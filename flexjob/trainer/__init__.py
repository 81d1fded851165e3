"""What user training code imports: elastic sampler over master shards, fixed global batch helper,
checkpoints, world info, and the elastic loop that survives world changes in place.

Importing this package is light; the torch-based pieces load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flexjob.core.batch import RankBatch
from flexjob.trainer.batch import accumulation_steps, fixed_batch_plan
from flexjob.trainer.sampler import Batch, ElasticSampler, NoShard, ShardSamples
from flexjob.trainer.world import Generation, WorldInfo, world_info

if TYPE_CHECKING:
    from flexjob.trainer.checkpoint import Checkpointer
    from flexjob.trainer.elastic import ElasticTrainer, Step

__all__ = [
    "Batch",
    "Checkpointer",
    "ElasticSampler",
    "ElasticTrainer",
    "Generation",
    "NoShard",
    "RankBatch",
    "ShardSamples",
    "Step",
    "WorldInfo",
    "accumulation_steps",
    "fixed_batch_plan",
    "world_info",
]

_LAZY = {
    "Checkpointer": "flexjob.trainer.checkpoint",
    "ElasticTrainer": "flexjob.trainer.elastic",
    "Step": "flexjob.trainer.elastic",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'flexjob.trainer' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
