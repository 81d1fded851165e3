"""The master hosts the job's torch TCPStore; each round has its own key prefix."""

from datetime import timedelta
from pathlib import Path

import psutil

from flexjob.core.training.master_config import MasterConfig
from flexjob.core.training.rendezvous import RendezvousConfig
from flexjob.master.main import start_master
from flexjob.rpc.client import MasterClient


def test_world_points_to_the_master_hosted_tcp_store_with_a_round_prefix(tmp_path: Path) -> None:
    import torch.distributed as dist

    config = MasterConfig(
        job_name="st", job_dir=str(tmp_path), rendezvous=RendezvousConfig(min_nodes=1, max_nodes=1)
    )
    with start_master(config) as master, MasterClient(master.address, "w0") as client:
        client.join()
        first = client.wait_world(10)
        client.join()
        second = client.wait_world(10)
        store = dist.TCPStore(
            first.store_host, first.store_port, is_master=False, timeout=timedelta(seconds=10)
        )
        dist.PrefixStore(first.store_prefix, store).set("rank0", "old")
        dist.PrefixStore(second.store_prefix, store).set("rank0", "new")
        assert dist.PrefixStore(first.store_prefix, store).get("rank0") == b"old"
        assert first.store_address == second.store_address
        assert first.store_prefix != second.store_prefix


def test_the_store_listens_on_the_masters_address_only(tmp_path: Path) -> None:
    """torch's TCPStore listens on every interface by default: the master's store must not
    (it has no token), so a master bound to 127.0.0.1 exposes its store to no one else."""
    config = MasterConfig(
        job_name="st", job_dir=str(tmp_path), rendezvous=RendezvousConfig(min_nodes=1, max_nodes=1)
    )
    with start_master(config) as master, MasterClient(master.address, "w0") as client:
        client.join()
        world = client.wait_world(10)
        listening = [
            c.laddr
            for c in psutil.Process().net_connections("inet")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == world.store_port
        ]
        assert [a.ip for a in listening] == ["127.0.0.1"], listening
