"""``flexjob run``'s supervision of its own processes: real child processes killed with real
signals, a real master process restarted on its port."""

import contextlib
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from flexjob.agent.run_supervisor import RunFailure, RunSupervisor
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.launch import MasterProcess, spawn_master
from flexjob.master.main import MasterHandle, start_master
from tests.support.polling import wait_until

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


class Spawner:
    """Starts stand-in agents (sleeping processes) and remembers each start."""

    def __init__(self, argv: list[str] = SLEEPER) -> None:
        self.argv = argv
        self.started: list[tuple[str, subprocess.Popen[bytes]]] = []

    def __call__(self, index: int, node_id: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(self.argv)
        self.started.append((node_id, proc))
        return proc

    def stop(self) -> None:
        for _, proc in self.started:
            proc.kill()
            proc.wait()


@pytest.fixture
def master(tmp_path: Path) -> Iterator[MasterHandle]:
    handle = start_master(MasterConfig(job_dir=str(tmp_path / "m"), host_store=False))
    yield handle
    handle.stop()


@pytest.fixture
def spawner() -> Iterator[Spawner]:
    s = Spawner()
    yield s
    s.stop()


def supervisor(
    address: str,
    spawner: Spawner,
    master: MasterProcess | None = None,
    config: MasterConfig | None = None,
    **kw: int,
) -> RunSupervisor:
    opts = {"nodes": 2, "min_nodes": 2, "nproc_per_node": 1, "max_restarts": 1, **kw}
    return RunSupervisor(
        address=address, master=master, master_config=config, spawn_agent=spawner, **opts
    )


def master_supervisor(
    master: MasterProcess, config: MasterConfig, spawner: Spawner, max_restarts: int
) -> RunSupervisor:
    """A supervisor of one stand-in agent and the real master process ``master``."""
    return supervisor(
        master.address, spawner, master, config, nodes=1, min_nodes=1, max_restarts=max_restarts
    )


def kill(proc: subprocess.Popen[bytes], sig: signal.Signals = signal.SIGKILL) -> None:
    proc.send_signal(sig)
    wait_until(lambda: proc.poll() is not None, 10, what="the process to die")


def test_an_agent_killed_by_a_signal_is_restarted_under_its_node_id(
    master: MasterHandle, spawner: Spawner
) -> None:
    sup = supervisor(master.address, spawner)
    kill(sup.agents[1].proc)
    sup.check(lambda: False)
    assert [n for n, _ in spawner.started] == ["worker-0", "worker-1", "worker-1"]
    assert sup.agents[1].proc is spawner.started[2][1] and sup.agents[1].running
    assert master.service.stats_snapshot()[0]["worker-1"].failures  # the master was told


def test_an_agent_without_restarts_left_is_dropped_when_the_rest_make_the_minimum(
    master: MasterHandle, spawner: Spawner
) -> None:
    sup = supervisor(master.address, spawner, max_restarts=0, min_nodes=1)
    kill(sup.agents[0].proc)
    sup.check(lambda: False)
    assert sup.agents[0].dropped and sup.running and len(spawner.started) == 2


def test_the_error_names_the_agent_that_died_when_too_few_are_left(
    master: MasterHandle, spawner: Spawner
) -> None:
    sup = supervisor(master.address, spawner, max_restarts=0)
    pid = sup.agents[1].proc.pid
    kill(sup.agents[1].proc)
    with pytest.raises(RunFailure, match=rf"agent worker-1 \(pid {pid}\) was killed by SIGKILL"):
        sup.check(lambda: False)


def test_an_agent_exiting_with_a_code_is_not_restarted(master: MasterHandle) -> None:
    spawner = Spawner([sys.executable, "-c", "raise SystemExit(3)"])
    try:
        sup = supervisor(master.address, spawner)
        wait_until(lambda: not sup.running, 10, what="the agents to exit")
        sup.check(lambda: False)
        assert len(spawner.started) == 2 and sup.codes() == [3, 3]
    finally:
        spawner.stop()


def test_a_death_after_the_data_is_done_needs_no_restart(
    master: MasterHandle, spawner: Spawner
) -> None:
    sup = supervisor(master.address, spawner, max_restarts=0)
    kill(sup.agents[1].proc)
    sup.check(lambda: True)
    assert len(spawner.started) == 2 and not sup.agents[1].dropped


def test_a_killed_master_is_restarted_on_its_port_until_restarts_run_out(
    tmp_path: Path, spawner: Spawner
) -> None:
    config = MasterConfig(job_dir=str(tmp_path / "job"), host_store=False)
    masters: list[MasterProcess] = [spawn_master(config)]
    try:
        sup = master_supervisor(masters[0], config, spawner, max_restarts=1)
        masters[0].kill()
        sup.check(lambda: False)
        assert sup.master is not None and sup.master is not masters[0]
        masters.append(sup.master)
        assert sup.master.address == masters[0].address
        pid = sup.master.process.pid
        masters[1].kill()
        with pytest.raises(RunFailure, match=rf"job master \(pid {pid}\) was killed by SIGKILL"):
            sup.check(lambda: False)
    finally:
        for m in masters:
            m.stop()


def _kill_the_next_master(known: set[int], killed: list[int], stop: threading.Event) -> None:
    """Thread: SIGKILL the first new master child as soon as it appears (while
    the supervisor restarts it, long before it serves)."""
    while not stop.is_set() and not killed:
        for p in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if p.pid not in known and "flexjob.master.process" in p.cmdline():
                    p.kill()
                    killed.append(p.pid)
                    return
        time.sleep(0.005)


def test_a_master_killed_while_it_restarts_is_restarted_again(
    tmp_path: Path, spawner: Spawner
) -> None:
    config = MasterConfig(job_dir=str(tmp_path / "job"), host_store=False)
    first = spawn_master(config)
    sup = master_supervisor(first, config, spawner, max_restarts=3)
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(
        target=_kill_the_next_master, args=({first.process.pid}, killed, stop), daemon=True
    )
    try:
        first.kill()
        killer.start()
        sup.check(lambda: False)
        assert killed, "the restarted master was not killed while starting"
        assert sup.master is not None and sup.master.process.poll() is None
        assert sup.master.address == first.address and sup.master_restarts == 2
    finally:
        stop.set()
        killer.join(5)
        if sup.master is not None:
            sup.master.stop()
