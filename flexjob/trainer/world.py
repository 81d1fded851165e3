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


def _int_env(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from exc


def node_identity() -> NodeIdentity:
    """Read this process's node identity from the environment the agent set."""
    local_rank = _int_env(names.ENV_LOCAL_RANK, 0)
    return NodeIdentity(
        node_id=os.environ.get(names.ENV_NODE_ID, f"local-{os.getpid()}"),
        replica_type=os.environ.get(names.ENV_REPLICA_TYPE, DEFAULT_TYPE.value),
        replica_index=_int_env(names.ENV_REPLICA_INDEX, 0),
        local_rank=local_rank,
        local_world_size=_int_env(names.ENV_LOCAL_WORLD_SIZE, 1),
        master=os.environ.get(names.ENV_MASTER) or None,
    )


def restart_count() -> int:
    """This process's TORCHELASTIC_RESTART_COUNT as the agent started it (0 when unset)."""
    return _int_env(names.ENV_TORCHELASTIC_RESTART_COUNT, 0)


def generation_from_env() -> Generation | None:
    """The generation the agent started this process in, or None when it set none."""
    if names.ENV_ROUND not in os.environ or names.ENV_STORE_ADDRESS not in os.environ:
        return None
    return Generation(
        round=_int_env(names.ENV_ROUND, 0),
        node_rank=_int_env(names.ENV_NODE_RANK, 0),
        num_nodes=_int_env(names.ENV_NUM_NODES, 1),
        store_address=os.environ[names.ENV_STORE_ADDRESS],
        store_prefix=os.environ.get(names.ENV_STORE_PREFIX, ""),
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


def world_info() -> WorldInfo:
    """This process's ranks and sizes: from the live elastic trainer, else from the environment."""
    if _current is not None:
        return _current
    ident = node_identity()
    rank = _int_env(names.ENV_RANK, 0)
    world_size = _int_env(names.ENV_WORLD_SIZE, 1)
    return build(
        WorldInfo,
        ident,
        rank=rank,
        world_size=world_size,
        node_rank=_int_env(names.ENV_NODE_RANK, rank // max(ident.local_world_size, 1)),
        num_nodes=_int_env(names.ENV_NUM_NODES, max(world_size // ident.local_world_size, 1)),
        round=_int_env(names.ENV_ROUND, 0),
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


def default_checkpoint_dir(given: str | os.PathLike[str] | None) -> str | None:
    """``given``, else the job's directory the agent names (``$FLEXJOB_CHECKPOINT_DIR``)."""
    if given:
        return os.fspath(given)
    return os.environ.get(names.ENV_CHECKPOINT_DIR) or None


def collective_timeout(given: float | None, default: float) -> float:
    """``given``, else ``$FLEXJOB_COLLECTIVE_TIMEOUT`` (set by the agent), else ``default``."""
    if given is not None:
        return given
    env = os.environ.get(names.ENV_COLLECTIVE_TIMEOUT)
    return float(env) if env else default
