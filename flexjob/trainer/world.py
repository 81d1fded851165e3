"""Who this training process is: node, ranks and the world it trains in.

``Generation`` is one formed world as the master handed it out (round, node rank, store);
``WorldInfo`` is what user code reads through ``world_info()``. Neither talks to the network:
``flexjob.trainer.rendezvous`` fetches generations, ``flexjob.trainer.elastic`` forms them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from flexjob.api import names
from flexjob.api.roles import DEFAULT_TYPE
from flexjob.core.fields import build
from flexjob.trainer.settings import TrainerSettings, current_or


@dataclass(frozen=True, slots=True)
class Generation:
    """One rendezvous round of the job, seen from one node.

    Ranks are per process: ``rank = node_rank * local_world_size + local_rank``; every node
    runs the same number of processes (as with torchrun).
    """

    round: int
    node_rank: int
    num_nodes: int
    store_address: str
    store_prefix: str
    #: The nodes of the world in node-rank order, where the master said (else empty).
    members: tuple[str, ...] = ()

    def rank(self, local_rank: int, local_world_size: int) -> int:
        return self.node_rank * local_world_size + local_rank

    def world_size(self, local_world_size: int) -> int:
        return self.num_nodes * local_world_size

    def process_ids(self, local_world_size: int) -> list[str] | None:
        """The shard id of every rank's process (``NodeIdentity.process_id``), in rank
        order; None when the members are not known."""
        if len(self.members) != self.num_nodes:
            return None
        return [
            process_id_of(node, local) for node in self.members for local in range(local_world_size)
        ]


@dataclass(frozen=True, slots=True)
class NodeIdentity:
    """The node (agent) this process belongs to and its place in that node."""

    node_id: str
    replica_type: str
    replica_index: int
    local_rank: int
    local_world_size: int
    master: str | None
    #: The node's membership with the master when its agent started this process
    #: (``core.training.fencing``; 0: not said).
    incarnation: int = 0

    @property
    def process_id(self) -> str:
        """Id used for this process's data shards: the node id for local rank 0."""
        return process_id_of(self.node_id, self.local_rank)


def process_id_of(node_id: str, local_rank: int) -> str:
    """The id a node's process of ``local_rank`` leases shards as: the node id for local rank
    0, ``<node>.<local rank>`` beyond."""
    return node_id if local_rank == 0 else f"{node_id}.{local_rank}"


@dataclass(frozen=True, slots=True)
class WorldInfo:
    """What a training process can ask: its ranks and sizes, now."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    node_rank: int
    num_nodes: int
    round: int
    node_id: str
    master: str | None


def node_identity(settings: TrainerSettings | None = None) -> NodeIdentity:
    """This process's node identity, from the environment the agent set (``settings``: else
    this process's, ``trainer.settings``)."""
    s = current_or(settings)
    return NodeIdentity(
        node_id=s.node_id if s.node_id is not None else f"local-{os.getpid()}",
        replica_type=s.replica_type if s.replica_type is not None else DEFAULT_TYPE.value,
        replica_index=s.replica_index,
        local_rank=s.local_rank,
        local_world_size=s.local_world_size,
        master=s.master,
        incarnation=s.incarnation,
    )


def restart_count(settings: TrainerSettings | None = None) -> int:
    """This process's TORCHELASTIC_RESTART_COUNT as the agent started it (0 when unset)."""
    return current_or(settings).restart_count


def generation_from_env(settings: TrainerSettings | None = None) -> Generation | None:
    """The generation the agent started this process in, or None when it set none."""
    s = current_or(settings)
    if s.round is None or s.store_address is None:
        return None
    return Generation(
        round=s.round,
        node_rank=s.node_rank if s.node_rank is not None else 0,
        num_nodes=s.num_nodes if s.num_nodes is not None else 1,
        store_address=s.store_address,
        store_prefix=s.store_prefix,
    )


def world_env(gen: Generation, ident: NodeIdentity, restart_count: int) -> dict[str, str]:
    """Environment variables describing ``gen`` for a process of ``ident`` (torch names too:
    torchrun's ranks, groups and roles; ``restart_count``: its TORCHELASTIC_RESTART_COUNT, the
    restarts and re-forms of this node's worker group before this world)."""
    host, _, port = gen.store_address.rpartition(":")
    rank = str(gen.rank(ident.local_rank, ident.local_world_size))
    size = str(gen.world_size(ident.local_world_size))
    return {
        names.ENV_RANK: rank,
        names.ENV_WORLD_SIZE: size,
        # One worker group per world: its role is the whole world (torchrun's single role).
        names.ENV_ROLE_RANK: rank,
        names.ENV_ROLE_WORLD_SIZE: size,
        names.ENV_GROUP_RANK: str(gen.node_rank),
        names.ENV_GROUP_WORLD_SIZE: str(gen.num_nodes),
        names.ENV_TORCHELASTIC_RESTART_COUNT: str(restart_count),
        names.ENV_LOCAL_RANK: str(ident.local_rank),
        names.ENV_LOCAL_WORLD_SIZE: str(ident.local_world_size),
        names.ENV_ROUND: str(gen.round),
        names.ENV_NODE_RANK: str(gen.node_rank),
        names.ENV_NUM_NODES: str(gen.num_nodes),
        names.ENV_STORE_ADDRESS: gen.store_address,
        names.ENV_STORE_PREFIX: gen.store_prefix,
        names.ENV_MASTER_ADDR: host,
        names.ENV_MASTER_PORT: port,
    }


_current: WorldInfo | None = None


def set_current(info: WorldInfo | None) -> None:
    """Record the world the elastic trainer formed last (called by the trainer only)."""
    global _current
    _current = info


def world_info(settings: TrainerSettings | None = None) -> WorldInfo:
    """This process's ranks and sizes: from the live elastic trainer, else from the environment."""
    if _current is not None:
        return _current
    s = current_or(settings)
    ident = node_identity(s)
    rank = s.rank if s.rank is not None else 0
    node_rank = rank // max(ident.local_world_size, 1) if s.node_rank is None else s.node_rank
    num_nodes = (
        max(s.world_size // ident.local_world_size, 1) if s.num_nodes is None else s.num_nodes
    )
    return build(
        WorldInfo,
        ident,
        rank=rank,
        world_size=s.world_size,
        node_rank=node_rank,
        num_nodes=num_nodes,
        round=s.round if s.round is not None else 0,
    )


def world_info_of(gen: Generation, ident: NodeIdentity) -> WorldInfo:
    """The ``WorldInfo`` of a process of ``ident`` in generation ``gen``."""
    rank = gen.rank(ident.local_rank, ident.local_world_size)
    size = gen.world_size(ident.local_world_size)
    return build(
        WorldInfo,
        ident,
        rank=rank,
        world_size=size,
        node_rank=gen.node_rank,
        num_nodes=gen.num_nodes,
        round=gen.round,
    )


def default_checkpoint_dir(
    given: str | os.PathLike[str] | None, settings: TrainerSettings | None = None
) -> str | None:
    """``given``, else the job's directory the agent names (``$FLEXJOB_CHECKPOINT_DIR``)."""
    if given:
        return os.fspath(given)
    return current_or(settings).checkpoint_dir


def collective_timeout(
    given: float | None, default: float, settings: TrainerSettings | None = None
) -> float:
    """``given``, else ``$FLEXJOB_COLLECTIVE_TIMEOUT`` (set by the agent), else ``default``."""
    if given is not None:
        return given
    env = current_or(settings).collective_timeout_s
    return env if env is not None else default
