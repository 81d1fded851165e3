"""The master's /metrics endpoint and its timeline, driven over real gRPC by three nodes."""

from pathlib import Path

from flexjob.api import names
from flexjob.core.training.dataset import Dataset
from flexjob.master.main import METRICS_ADDR_FILE, start_master
from flexjob.observe import timeline
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeStats
from tests.support.masters import master_config
from tests.support.metrics import dashboard_metrics, metrics_url, scrape, value


def test_master_metrics_and_timeline_show_a_lost_node(tmp_path: Path) -> None:
    job_dir = tmp_path / "job"
    config = master_config(
        "seen",
        job_dir,
        datasets=(Dataset(size=40, shard_size=5, epochs=1),),
        rendezvous__min_nodes=2,
        rendezvous__max_nodes=3,
        rendezvous__last_call_timeout=0.2,
        node_health__heartbeat_timeout=5.0,
    )
    handle = start_master(config)
    clients = [MasterClient(handle.address, f"worker-{i}") for i in range(3)]
    url = metrics_url(job_dir / METRICS_ADDR_FILE)
    before = scrape(url)  # the RPC histogram is the process's: other masters here count too
    join = {"job_name": "seen", "method": "JoinRendezvous", "code": "OK"}
    joins_before = (
        value(before, "flexjob_master_rpc_seconds_count", **join)
        if any(s.labels == join for s in before["flexjob_master_rpc_seconds"].samples)
        else 0
    )
    try:
        for c in clients:
            c.join()
        assert {c.wait_world(30).world_size for c in clients} == {3}
        first = clients[0].get_shard()
        clients[0].report_shard(first.shard_id)
        clients[1].get_shard()  # held: doing
        clients[0].kv_set(names.KV_STEP, b"7")
        clients[0].kv_set(names.KV_LOSS, b"0.25")
        clients[0].report_stats(NodeStats(10.0, 1 << 20, 7, 120.0, 3))
        clients[2].report_failure("worker 0 exited with 1", 1, restarting=False)
        for c in clients[:2]:
            c.join()
        assert {c.wait_world(30).world_size for c in clients[:2]} == {2}

        got = scrape(url)
        job = {"job_name": "seen"}
        assert value(got, "flexjob_master_world_size", **job) == 2
        assert value(got, "flexjob_master_rendezvous_rounds_total", **job) == 2
        assert value(got, "flexjob_master_node_failures_total", kind="node_dead", **job) == 1
        assert value(got, "flexjob_master_shards", state="done", **job) == 1
        # worker-1's shard stays out while it lives; worker-2 held none
        assert value(got, "flexjob_master_shards", state="doing", **job) == 1
        assert value(got, "flexjob_master_shards", state="todo", **job) == 6
        assert value(got, "flexjob_master_samples_total", **job) == 5  # the done shard's
        assert "flexjob_master_samples_per_second" not in got  # a rate is rate() of a counter
        assert value(got, "flexjob_master_step", **job) == 7
        joins = value(got, "flexjob_master_rpc_seconds_count", **join) - joins_before
        assert joins == 5
        assert dashboard_metrics("flexjob_master_") <= set(got)
    finally:
        for c in clients:
            c.close()
        handle.stop()

    tl = timeline.read(job_dir)
    assert tl.samples[-1].loss == 0.25 and tl.samples[-1].world_size == 2
    lines = [line for _, line in timeline.narrate(tl.events)]
    assert any(line.startswith("node worker-2 lost, world 3 → 2, resumed in ") for line in lines)
    assert "node worker-2 failed (exit code 1, not restarting)" in lines
