"""``flexjob run`` keeps its own processes alive: the job master and the agents it started.

A master that dies is started again on the same job directory and port (it restores its state
file, the agents and trainers reconnect). An agent killed by a signal is started again under
the same node id after the master was told its processes are gone (their shards go back at
once). Each process gets ``--max-restarts`` restarts; an agent that has none left is dropped
when the others still make ``--nnodes``'s minimum (the world shrinks), else the run fails with
a ``RunFailure`` that names what died. An agent that *exits* with a code (its workers failed
past their own restarts) is not restarted: that code is the job's. Not for signals sent to
``flexjob run`` itself nor for the exit summary (``runner.launcher``).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from flexjob.api.errors import AgentError
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.launch import MasterProcess, spawn_master

log = logging.getLogger(__name__)


class RunFailure(AgentError):
    """A process of the run died and could be neither restarted nor done without."""


def death(code: int) -> str:
    """``-9`` → "was killed by SIGKILL"; ``3`` → "exited with 3"."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
        return f"was killed by signal {-code}"
    return f"exited with {code}"


@dataclass
class AgentSlot:
    """One agent this run started: its node id survives its restarts."""

    index: int
    node_id: str
    proc: subprocess.Popen[bytes]
    restarts: int = 0
    dropped: bool = False

    @property
    def running(self) -> bool:
        return not self.dropped and self.proc.poll() is None

    @property
    def code(self) -> int | None:
        return self.proc.poll()


class RunSupervisor:
    """Restarts the run's master and agents; ``check`` once per loop of the launcher."""

    def __init__(
        self,
        *,
        address: str,
        master: MasterProcess | None,
        master_config: MasterConfig | None,
        spawn_agent: Callable[[int, str], subprocess.Popen[bytes]],
        nodes: int,
        min_nodes: int,
        nproc_per_node: int,
        max_restarts: int,
        first_index: int = 0,
    ) -> None:
        self.address = address
        self.master = master
        self._master_config = master_config
        self._spawn_agent = spawn_agent
        self._min_nodes = min_nodes
        self._nproc = nproc_per_node
        self._max_restarts = max_restarts
        self.master_restarts = 0
        indexes = range(first_index, first_index + nodes)  # ``--node-rank``: the first here
        self.agents = [AgentSlot(i, f"worker-{i}", spawn_agent(i, f"worker-{i}")) for i in indexes]

    @property
    def running(self) -> bool:
        return any(a.running for a in self.agents)

    def codes(self) -> list[int]:
        """Exit codes of the agents (a dropped agent's is its death)."""
        return [a.proc.returncode if a.proc.returncode is not None else 0 for a in self.agents]

    def check(self, finished: Callable[[], bool]) -> None:
        """Restart what died since the last call; ``finished``: the data is all done (a
        death then needs no restart). Raises ``RunFailure`` when the run cannot go on."""
        self._check_master()
        for slot in self.agents:
            code = slot.code
            if slot.dropped or code is None or code >= 0:
                continue  # running, or exited with its own code
            if finished():
                continue
            self._agent_died(slot, code)

    def _check_master(self) -> None:
        m = self.master
        if m is None or m.process.poll() is None or not self.running:
            return
        what = f"job master (pid {m.process.pid}) {death(m.process.returncode)}"
        assert self._master_config is not None
        port = int(self.address.rsplit(":", 1)[1])
        while True:  # a master that dies while it restarts (killed again) is restarted again
            if self.master_restarts >= self._max_restarts:
                raise RunFailure(f"{what}; --max-restarts {self._max_restarts} spent")
            self.master_restarts += 1
            log.warning(
                "%s: restarting it (%d of %d)", what, self.master_restarts, self._max_restarts
            )
            try:
                self.master = spawn_master(self._master_config.with_overrides(port=port))
                return
            except RuntimeError as exc:  # it exited before it served
                what = f"job master died while restarting ({exc})"
            except TimeoutError as exc:
                raise RunFailure(f"{what}; it could not be restarted: {exc}") from None

    def _agent_died(self, slot: AgentSlot, code: int) -> None:
        what = f"agent {slot.node_id} (pid {slot.proc.pid}) {death(code)}"
        if slot.restarts < self._max_restarts:
            self._report_gone(slot.node_id, what, restarting=True)
            slot.restarts += 1
            log.warning("%s: restarting it (%d of %d)", what, slot.restarts, self._max_restarts)
            slot.proc = self._spawn_agent(slot.index, slot.node_id)
            return
        self._report_gone(slot.node_id, what, restarting=False)
        slot.dropped = True
        left = sum(a.running for a in self.agents)
        if left >= self._min_nodes:
            log.warning("%s; --max-restarts spent: the world shrinks to %d node(s)", what, left)
            return
        raise RunFailure(
            f"{what}; --max-restarts {self._max_restarts} spent and {left} node(s) are left, "
            f"fewer than --nnodes' minimum {self._min_nodes}"
        )

    def _report_gone(self, node_id: str, reason: str, *, restarting: bool) -> None:
        """Tell the master the node's processes are gone: their shards go back now and the
        world re-forms without waiting for a heartbeat timeout."""
        from flexjob.rpc.client import MasterClient  # gRPC: only once an agent died

        ids = [node_id] + [f"{node_id}.{r}" for r in range(1, self._nproc)]
        for process_id in ids:
            try:
                with MasterClient(self.address, process_id, timeout=5.0, retry_deadline=10.0) as c:
                    c.report_failure(reason, 1, restarting)
            except Exception as exc:  # the master may be down too: its heartbeats catch up
                log.info("could not report %s to the master: %s", process_id, exc)
