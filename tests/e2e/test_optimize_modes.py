"""Optimize modes end to end: a real master process (gRPC) and simulated workers playing the
operator's part (they follow the master's ScalePlans), with a real brain process in cluster mode.

Cluster mode: the master is SIGKILLed mid-job and restarted; it reloads its history from the
brain, keeps growing the job to the throughput knee, and the job finishes with the plan history
intact. Single-job mode: the master alone grows the job to the knee from its in-memory stats."""

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from flexjob.api import OptimizeMode, ReplicaType
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.launch import MasterProcess, spawn_master
from flexjob.rpc.brain_client import BrainClient
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeRef, NodeStats
from tests.brain import recorded
from tests.support.brain import brain_process
from tests.support.masters import master_config
from tests.support.polling import wait_until

pytestmark = pytest.mark.e2e

KNEE = recorded.load("throughput_knee")
#: Mean samples/s of the whole job at each world size, from the recorded curve.
CURVE = {
    size: sum(
        s.samples_per_second for s in recorded.speed_samples(KNEE)[1:] if s.world_size == size
    )
    / sum(1 for s in recorded.speed_samples(KNEE)[1:] if s.world_size == size)
    for size in range(1, 7)
}
SHARDS = 3000


def wait_for(cond: Callable[[], bool], timeout: float = 60.0, what: str = "") -> None:
    wait_until(cond, timeout=timeout, what=what)


@dataclass
class Cluster:
    """Workers that follow the newest ScalePlan in the job dir, as the operator would."""

    address: str
    plan_dir: Path
    shard_time: float = 0.01
    active: int = 1
    done_shards: int = 0
    finished: threading.Event = field(default_factory=threading.Event)
    errors: list[BaseException] = field(default_factory=list)
    _stops: dict[int, threading.Event] = field(default_factory=dict)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def plans(self) -> list[dict[str, Any]]:
        files = sorted(self.plan_dir.glob("*.json"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
        return [json.loads(p.read_text()) for p in files]

    def sizes(self) -> list[int]:
        """Worker counts of the ScalePlans written so far, oldest first."""
        return [p["spec"]["replicaResourceSpecs"]["worker"]["replicas"] for p in self.plans()]

    def follow(self) -> None:
        """Scale to the newest plan's worker count."""
        sizes = self.sizes()
        want = sizes[-1] if sizes else 1
        for i in range(len(self._stops), want):
            self._start(i)
        with self._lock:
            self.active = want
        for i in range(want, len(self._stops)):
            self._stops[i].set()

    def _start(self, i: int) -> None:
        self._stops[i] = threading.Event()
        t = threading.Thread(target=self._worker, args=(i, self._stops[i]), daemon=True)
        self._threads.append(t)
        t.start()

    def _worker(self, i: int, stop: threading.Event) -> None:
        node = NodeRef(f"worker-{i}", "worker", i)
        try:
            with MasterClient(self.address, node, retry_deadline=60) as client:
                step = 0
                while not stop.is_set() and not self.finished.is_set():
                    shard = client.get_shard()
                    if shard.end_of_data:
                        self.finished.set()
                        return
                    if shard.has_shard:
                        time.sleep(self.shard_time)
                        if client.report_shard(shard.shard_id):
                            with self._lock:
                                self.done_shards += 1
                    size = self.active
                    step += 1
                    stats = NodeStats(
                        cpu_percent=90.0,
                        memory_bytes=512 * 2**20,
                        step=step,
                        samples_per_second=CURVE[size] / size,
                        world_size=size,
                    )
                    client.report_stats(stats)
        except BaseException as exc:
            self.errors.append(exc)

    def finish_at_the_knee(self) -> None:
        """Follow the plans until the job settles at the knee (one worker past it, then back),
        then let it finish at full speed; no worker saw an error."""

        def settled() -> bool:
            self.follow()
            return self.sizes()[-2:] == [KNEE["knee"] + 1, KNEE["knee"]]

        wait_for(settled, what="the job to find the knee")
        self.shard_time = 0.0
        wait_for(self.finished.is_set, timeout=120, what="the job to finish")
        assert self.errors == []

    def stop(self) -> None:
        for s in self._stops.values():
            s.set()
        for t in self._threads:
            t.join(30)


def knee_job(job_dir: Path, name: str, mode: OptimizeMode, **extra: Any) -> MasterConfig:
    """The master of a job of ``SHARDS`` shards, 1-8 workers, optimised every 0.25 s."""
    settings = {
        "datasets": (Dataset(size=SHARDS * 2, shard_size=2),),
        "rendezvous__max_nodes": 8,
        "node_health__heartbeat_timeout": 5.0,
        "optimizer__mode": mode,
        "optimizer__interval": 0.25,
    }
    return master_config(name, job_dir, **{**settings, **extra})


@pytest.fixture
def brain_url(tmp_path: Path) -> Iterator[str]:
    with brain_process(f"sqlite:///{tmp_path}/brain.sqlite", tmp_path / "brain.log") as (_, url):
        yield url


def test_killed_cluster_mode_master_reloads_its_plans_from_the_brain_and_finishes(
    brain_url: str, tmp_path: Path
) -> None:
    job_dir = tmp_path / "job"
    config = knee_job(job_dir, "default.job", OptimizeMode.CLUSTER, optimizer__brain_url=brain_url)
    master: MasterProcess = spawn_master(config)
    cluster = Cluster(master.address, job_dir / "scaleplans")
    try:
        cluster.follow()

        def grown_to(n: int) -> bool:
            cluster.follow()
            return cluster.active >= n

        wait_for(lambda: grown_to(3), what="the job to grow to 3 workers")
        before = cluster.plans()
        master.kill()
        assert not cluster.finished.is_set()
        port = int(master.address.rsplit(":", 1)[1])
        master = spawn_master(config.with_overrides(port=port))
        cluster.finish_at_the_knee()

        after = cluster.plans()
        assert after[: len(before)] == before  # the restarted master rewrote nothing
        assert cluster.sizes() == [2, 3, 4, 5, KNEE["knee"]]
        history = BrainClient(brain_url).get_job_metrics("default.job").plans
        # the brain also holds the initial plan (1 worker, as the spec asked: no ScalePlan)
        assert [h.id for h in history[1:]] == [
            int(p["metadata"]["annotations"]["flexjob.dev/brain-plan-id"]) for p in after
        ]
        assert history[0].plan.replica_resources[ReplicaType.WORKER].replicas == 1
        assert "restored 3 plans" in (job_dir / "master.log").read_text()
    finally:
        cluster.stop()
        master.stop()


def test_single_job_mode_master_grows_the_job_to_the_knee_on_its_own(tmp_path: Path) -> None:
    job_dir = tmp_path / "job"
    config = knee_job(job_dir, "job", OptimizeMode.SINGLE_JOB)
    master = spawn_master(config)
    cluster = Cluster(master.address, job_dir / "scaleplans")
    try:
        cluster.finish_at_the_knee()
        assert cluster.sizes() == [2, 3, 4, 5, KNEE["knee"]]
    finally:
        cluster.stop()
        master.stop()
