"""A training process for ``test_lease_kill``: trains shards leased with a growing lease,
writes each committed batch's samples (``epoch index`` lines) to ``argv[3]``, and once it
holds at least ``argv[4]`` leased shards it prints ``HOLDING <ids>`` and waits, mid-step, to be
killed. ``python lease_holder.py ADDRESS PROCESS_ID OUT MIN_HELD``."""

import sys
import threading

from flexjob.core.training.lease_size import LeasePolicy
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import NodeRef
from flexjob.trainer.lease import ShardLeaser
from flexjob.trainer.sampler import ElasticSampler, NoShard


def main() -> None:
    address, process_id, out, min_held = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    client = MasterClient(address, NodeRef(process_id))
    # Leases double at every call whatever the speed (a policy that counts any lease as quick).
    leaser = ShardLeaser(client, LeasePolicy(hold_s=1e9))
    sampler = ElasticSampler(leaser, batch_size=1 << 20)  # one batch per shard
    with open(out, "a") as log:
        while True:
            batch = sampler.next_batch()
            if isinstance(batch, NoShard):
                raise SystemExit(f"no shard ({batch}) before holding {min_held}")
            held = leaser.holding("")
            if len(held) >= min_held:
                print("HOLDING", batch.shard_id, *held, flush=True)
                threading.Event().wait()  # the step never finishes: killed here
            log.writelines(f"{batch.epoch} {i}\n" for i in batch.indices)
            log.flush()  # trained: the step committed
            sampler.commit(batch)


if __name__ == "__main__":
    main()
