"""A training process SIGKILLed while it holds a lease of several shards (the adaptive lease
grew): the shards it leased and never finished go back to the master, and with a second
process every sample is trained exactly once (a real master, a real child process, a real
signal)."""

import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexjob.core.training.dataset import Dataset
from flexjob.master.main import MasterHandle, start_master
from flexjob.rpc.client import MasterClient
from flexjob.trainer.lease import ShardLeaser
from flexjob.trainer.sampler import ElasticSampler
from tests.support.masters import master_config, serving

SIZE, SHARD, EPOCHS, MIN_HELD = 120, 4, 2, 6
HOLDER = Path(__file__).with_name("lease_holder.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def master(tmp_path: Path) -> Iterator[MasterHandle]:
    config = master_config(
        "lease-kill",
        tmp_path / "job",
        datasets=(Dataset(size=SIZE, shard_size=SHARD, epochs=EPOCHS, seed=5),),
        rendezvous__max_nodes=2,
    )
    yield from serving(start_master(config))


def doing(master: MasterHandle) -> int:
    (dataset,) = master.service.view().datasets
    return dataset.doing


def test_a_process_killed_holding_a_grown_lease_loses_and_repeats_no_sample(
    master: MasterHandle, tmp_path: Path
) -> None:
    trained_log = tmp_path / "trained.txt"
    holder = subprocess.Popen(
        [sys.executable, str(HOLDER), master.address, "w0", str(trained_log), str(MIN_HELD)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert holder.stdout is not None
        line = holder.stdout.readline()  # bounded by the test's timeout
        assert line.startswith("HOLDING"), line
        training, *held = (int(x) for x in line.split()[1:])
        assert len(held) >= MIN_HELD and training in held
        assert doing(master) == len(held)  # every shard it holds is DOING for it alone
        holder.send_signal(signal.SIGKILL)
        assert holder.wait(30) == -signal.SIGKILL
    finally:
        holder.kill()
        holder.wait(30)
    with MasterClient(master.address, "w0") as agent:  # what w0's agent says once it died
        agent.report_failure("worker killed", -9, restarting=True)
    assert doing(master) == 0  # all back in TODO, none lost
    before = Counter(tuple(map(int, row.split())) for row in trained_log.read_text().splitlines())
    with MasterClient(master.address, "w1") as client:
        leaser = ShardLeaser(client)  # the default, adaptive lease
        sampler = ElasticSampler(leaser, batch_size=SHARD)
        after: Counter[tuple[int, int]] = Counter()
        for batch in sampler:
            after.update((batch.epoch, i) for i in batch.indices)
        progress = client.get_progress()
    assert before and after
    assert before + after == Counter({(e, i): 1 for e in range(EPOCHS) for i in range(SIZE)})
    assert progress.finished and progress.samples_done == EPOCHS * SIZE
