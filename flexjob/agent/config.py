"""The agent's configuration.

``AgentConfig`` is built by the CLI (``flexjob agent`` / ``flexjob run``) and validated here with
one message per bad field. Not for the states of its workers (``agent.workers.WorkerState``).
"""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flexjob.agent.output import OutputConfig
from flexjob.api import names
from flexjob.api.roles import DEFAULT_TYPE


def default_node_id(env: Mapping[str, str] | None = None) -> str:
    """A node's id when none is given: the replica's own name (``worker-1``) when an operator
    started it (``FLEXJOB_REPLICA_TYPE`` / ``FLEXJOB_REPLICA_INDEX`` set), so that the master's
    stats and plans name the replica; else ``HOST-PID`` (a node started by hand)."""
    env = os.environ if env is None else env
    rtype = env.get(names.ENV_REPLICA_TYPE)
    if rtype:
        return f"{rtype}-{env.get(names.ENV_REPLICA_INDEX) or '0'}"
    return f"{socket.gethostname()}-{os.getpid()}"


def default_replica_type(env: Mapping[str, str] | None = None) -> str:
    """The replica type an operator gave this node (``FLEXJOB_REPLICA_TYPE``), else worker."""
    env = os.environ if env is None else env
    return env.get(names.ENV_REPLICA_TYPE) or DEFAULT_TYPE.value


def agent_default(name: str) -> Any:
    """The default of ``AgentConfig``'s field ``name`` (written there once: what the CLI's
    flags default to)."""
    return AgentConfig.__dataclass_fields__[name].default


def run_dir_of(config: AgentConfig) -> str:
    """Where a node's worker status files go: ``--run-dir``, else ``flexjob-<job>`` in
    ``$TMPDIR`` (``/tmp``)."""
    return config.run_dir or os.path.join(
        os.environ.get("TMPDIR", "/tmp"), f"flexjob-{config.job_name}"
    )


@dataclass(frozen=True, slots=True)
class AgentConfig:
    target: str
    #: HOST:PORT of the job's master; "" only in a run's agent template (``runner.config``),
    #: where each agent gets the address of the master the run starts.
    master: str = ""
    args: tuple[str, ...] = ()
    module: bool = False
    node_id: str = "worker-0"
    replica_type: str = DEFAULT_TYPE.value
    replica_index: int = 0
    job_name: str = "job"
    nproc_per_node: int = 1
    max_restarts: int = 3
    monitor_interval: float = 0.5
    rendezvous_timeout: float = 300.0
    address: str = "127.0.0.1"
    run_dir: str = ""
    #: Seconds a worker using the trainer helpers may go without progress before it is
    #: killed and restarted as hung; 0 turns hang detection off.
    hang_timeout: float = 180.0
    env: dict[str, str] = field(default_factory=dict)
    output: OutputConfig = field(default_factory=OutputConfig)

    def to_dict(self) -> dict[str, Any]:
        """Its fields as JSON values (what a warm spare and ``agent.process`` are handed)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AgentConfig:
        """The config ``to_dict`` gave, checked again."""
        fields = dict(data)
        fields["args"] = tuple(fields.get("args", ()))
        fields["output"] = OutputConfig(**fields.get("output", {}))
        return cls(**fields)

    def __post_init__(self) -> None:
        host, _, port = self.master.rpartition(":")
        if self.master and (not host or not port.isdigit()):
            raise ValueError(f"master must be HOST:PORT, got {self.master!r}")
        if self.nproc_per_node < 1:
            raise ValueError(f"nproc_per_node must be >= 1, got {self.nproc_per_node}")
        if self.max_restarts < 0:
            raise ValueError(f"max_restarts must be >= 0, got {self.max_restarts}")
        if self.monitor_interval <= 0:
            raise ValueError(f"monitor_interval must be > 0, got {self.monitor_interval}")
        if self.hang_timeout < 0:
            raise ValueError(f"hang_timeout must be >= 0 (0 = off), got {self.hang_timeout}")
        if not self.node_id:
            raise ValueError("node_id must not be empty")
        if self.rendezvous_timeout <= 0:
            raise ValueError(f"rendezvous_timeout must be > 0, got {self.rendezvous_timeout}")
