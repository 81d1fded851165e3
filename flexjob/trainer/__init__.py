"""What user training code imports: elastic sampler over master shards, fixed global batch helper,
checkpoints, world info, the elastic loop that survives world changes in place, and the
parameter-server client (``PsSet``, ``PsEmbedding``, ``PsSync``, ``replica_link``).

Importing this package is light; the torch-based pieces load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flexjob.core.training.batch import RankBatch
from flexjob.lazy import lazy_exports
from flexjob.trainer.batch import Step, accumulation_steps, fixed_batch_plan
from flexjob.trainer.sampler import Batch, ElasticSampler, NoShard, ShardSamples
from flexjob.trainer.world import Generation, WorldInfo, world_info

if TYPE_CHECKING:
    from flexjob.trainer.checkpoint import Checkpointer
    from flexjob.trainer.data_sampler import ElasticDistributedSampler
    from flexjob.trainer.elastic import ElasticTrainer
    from flexjob.trainer.link import replica_link
    from flexjob.trainer.ps_set import PsSet
    from flexjob.trainer.ps_torch import PsEmbedding, PsSync

__all__ = [
    "Batch",
    "Checkpointer",
    "ElasticDistributedSampler",
    "ElasticSampler",
    "ElasticTrainer",
    "Generation",
    "NoShard",
    "PsEmbedding",
    "PsSet",
    "PsSync",
    "RankBatch",
    "ShardSamples",
    "Step",
    "WorldInfo",
    "accumulation_steps",
    "fixed_batch_plan",
    "replica_link",
    "world_info",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Checkpointer": "checkpoint",
        "ElasticDistributedSampler": "data_sampler",
        "ElasticTrainer": "elastic",
        "PsSet": "ps_set",
        "PsEmbedding": "ps_torch",
        "PsSync": "ps_torch",
        "replica_link": "link",
    },
)
