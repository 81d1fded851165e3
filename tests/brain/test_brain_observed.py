"""A job master in cluster mode against a real ``flexjob brain`` process: the brain's job record
ends with the job's speed samples and status, and the brain's /metrics counts its work."""

from pathlib import Path

from flexjob.api import OptimizeMode
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import MasterConfig, OptimizerConfig
from flexjob.core.training.rendezvous import RendezvousConfig
from flexjob.master.main import start_master
from flexjob.rpc.brain_client import BrainClient
from flexjob.rpc.brain_messages import JobStatus
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeStats
from tests.support.brain import brain_process
from tests.support.metrics import dashboard_metrics, scrape, value


def test_brain_record_of_a_short_job_has_its_speed_and_final_status(tmp_path: Path) -> None:
    with brain_process(f"sqlite:///{tmp_path}/brain.sqlite", tmp_path / "brain.log") as (_, url):
        config = MasterConfig(
            job_name="short",
            datasets=(Dataset(size=10, shard_size=5, epochs=1),),
            host_store=False,
            rendezvous=RendezvousConfig(min_nodes=2, max_nodes=2, last_call_timeout=0.1),
            optimizer=OptimizerConfig(mode=OptimizeMode.CLUSTER, brain_url=url),
        )
        handle = start_master(config)
        clients = [MasterClient(handle.address, f"worker-{i}") for i in range(2)]
        try:
            for c in clients:
                c.join()
            for c in clients:
                c.wait_world(30)
                c.report_stats(NodeStats(20.0, 1 << 20, 3, 50.0, 2))
                shard = c.get_shard()
                assert c.report_shard(shard.shard_id)
        finally:
            for c in clients:
                c.close()
            handle.stop()  # the job's data is done: well within one optimize interval (30 s)
        with BrainClient(url) as brain:
            record = brain.get_job_metrics("short")
        assert record.status is JobStatus.SUCCEEDED
        assert [(s.samples_per_second, s.world_size) for s in record.speed_samples] == [(100.0, 2)]
        got = scrape(f"{url}/metrics")
        assert value(got, "flexjob_brain_optimize_requests_total", stage="create") == 1
        assert dashboard_metrics("flexjob_brain_") <= set(got)
