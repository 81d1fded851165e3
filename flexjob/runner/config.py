"""``RunConfig``: what one ``flexjob run`` runs — the settings of the master it starts and the
template of its agents, each held whole, plus the fields only a run has.

``RUN_MASTER`` is the master a run starts before its flags change it: ``MasterConfig``'s
defaults, the node-death timeout included (a run used to declare a silent node dead after
10 s, every other master after 30 s; a node that dies is seen at once by its broken stream, so
the timeout only decides how long a *hung* node holds its shards, and one default serves both).
Pure data and checks; ``runner.launcher`` starts the processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from flexjob.agent.config import AgentConfig, default_replica_type
from flexjob.agent.process import command
from flexjob.core.training.master_config import MasterConfig

#: The master settings of a run's own master before its flags: the defaults.
RUN_MASTER = MasterConfig()


def parse_nnodes(text: str) -> tuple[int, int]:
    """``"2"`` → (2, 2); ``"1:3"`` → (1, 3). Errors name the option."""
    lo_s, sep, hi_s = text.partition(":")
    try:
        lo = int(lo_s)
        hi = int(hi_s) if sep else lo
    except ValueError:
        raise ValueError(f"--nnodes must be N or MIN:MAX with integers, got {text!r}") from None
    if lo < 1 or hi < lo:
        raise ValueError(f"--nnodes must satisfy 1 <= MIN <= MAX, got {text!r}")
    return lo, hi


@dataclass(frozen=True, slots=True)
class RunConfig:
    #: What every agent of the run runs (its ``master``, node id and index are filled in
    #: when it starts: ``agent_command``).
    agent: AgentConfig
    #: The master the run starts (its ``job_dir``, ``host`` and ``port`` are filled in then);
    #: its ``rendezvous`` bounds are the run's ``--nnodes``.
    master: MasterConfig = RUN_MASTER
    #: ``--master``: HOST:PORT of a running master to join instead of starting one.
    join_master: str | None = None
    #: Agents to start here (default: the master's min nodes).
    start_nodes: int | None = None
    #: Index of the first node started here (``--node-rank``): node ids ``worker-N`` from it.
    node_rank: int = 0
    progress: bool = True
    plot: str | None = None  # a PNG of the job's timeline, written when the run ends
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.agent.job_name != self.master.job_name:
            raise ValueError(
                f"the agents' job name ({self.agent.job_name!r}) must be the master's "
                f"({self.master.job_name!r})"
            )

    @property
    def job_name(self) -> str:
        return self.master.job_name

    @property
    def min_nodes(self) -> int:
        return self.master.rendezvous.min_nodes

    @property
    def nodes_to_start(self) -> int:
        return self.start_nodes if self.start_nodes is not None else self.min_nodes


def agent_command(
    master: str, node_id: str, index: int, opts: RunConfig, run_dir: str
) -> list[str]:
    """The command line of the agent of node ``node_id`` (``agent.process``: what ``flexjob
    agent`` runs once its options are parsed, without parsing any)."""
    return command(
        replace(
            opts.agent,
            master=master,
            node_id=node_id,
            replica_type=default_replica_type(),
            replica_index=index,
            run_dir=run_dir,
        )
    )
