"""The rules of a running job: its master's settings, datasets and shards, rendezvous, the batch
plan, leases, slow nodes, flash checkpoints, devices."""
