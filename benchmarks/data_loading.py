"""Data loading: what the elastic sampler costs per epoch against a plain ``DistributedSampler``.

One training process (a world of one), a map-style dataset whose ``__getitem__`` spends
``--decode-us`` of CPU per sample (a realistic decode), and a ``DataLoader`` with ``--workers``
worker processes and batches of ``--batch``. Baseline: torch's ``DistributedSampler``
(``num_replicas=1, rank=0``) in the same loader over the same data. flexjob: an
``ElasticDistributedSampler`` fed by a real master (a child process, over gRPC on loopback),
once per lease size in ``--leases`` (``FLEXJOB_SHARD_LEASE``), shards of ``--shard-size``.
Every epoch is timed end to end (every batch consumed, the shard reports included); the
samplers take turns epoch by epoch, ``--epochs`` each, and medians are compared. Prints
seconds per epoch, the overhead against the baseline (goal: <= 2%), and the master calls per
epoch. Not part of the test suite.

    PYTHONPATH=. python benchmarks/data_loading.py [--samples 10000] [--decode-us 300]
        [--workers 2] [--epochs 3] [--leases 1,8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import torch
from torch.utils.data import DataLoader, DistributedSampler, Sampler

from flexjob.api import names
from flexjob.core.master_config import MasterConfig
from flexjob.master.launch import spawn_master
from flexjob.trainer import ElasticDistributedSampler
from flexjob.trainer.link import MasterLink
from flexjob.trainer.world import node_identity


class DecodedDataset(torch.utils.data.Dataset[torch.Tensor]):
    """``size`` samples; each costs ``decode_us`` of CPU, like decoding an image."""

    def __init__(self, size: int, decode_us: float) -> None:
        self.size, self.decode_s = size, decode_us / 1e6

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> torch.Tensor:
        until = time.perf_counter() + self.decode_s
        while time.perf_counter() < until:
            pass
        return torch.full((16,), float(index))


def _epoch(loader: Iterable[torch.Tensor]) -> tuple[float, int]:
    """Seconds to consume one epoch, and the samples it held."""
    start, seen = time.perf_counter(), 0
    for batch in loader:
        seen += len(batch)
    return time.perf_counter() - start, seen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--samples", type=int, default=10_000)
    ap.add_argument("--decode-us", type=float, default=300.0, help="CPU per sample")
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--shard-size", type=int, default=64, help="the sampler's default")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--leases", default="1,8", help="FLEXJOB_SHARD_LEASE values")
    args = ap.parse_args()
    leases = [int(k) for k in args.leases.split(",") if k]
    data = DecodedDataset(args.samples, args.decode_us)

    def loader(sampler: Sampler[int]) -> DataLoader[torch.Tensor]:
        return DataLoader(
            data,
            batch_size=args.batch,
            sampler=sampler,
            num_workers=args.workers,
            persistent_workers=False,
        )

    with tempfile.TemporaryDirectory(prefix="flexjob-bench-") as tmp:
        config = MasterConfig(
            job_name="bench", job_dir=str(Path(tmp) / "job"), min_nodes=1, max_nodes=1,
            host_store=False,
        )  # fmt: skip
        master = spawn_master(config)
        os.environ[names.ENV_MASTER] = master.address
        os.environ[names.ENV_NODE_ID] = "bench-0"
        try:
            links: dict[int, MasterLink] = {}
            samplers: dict[str, Sampler[int]] = {"DistributedSampler": DistributedSampler(
                data, num_replicas=1, rank=0, shuffle=True, seed=0
            )}  # fmt: skip
            for k in leases:
                os.environ[names.ENV_SHARD_LEASE] = str(k)
                links[k] = MasterLink(node_identity())
                samplers[f"flexjob lease-{k}"] = ElasticDistributedSampler(
                    data,
                    shard_size=args.shard_size,
                    epochs=args.epochs,
                    name=f"lease-{k}",
                    source=links[k],
                )
            times: dict[str, list[float]] = {name: [] for name in samplers}
            calls: dict[int, int] = {}
            for epoch in range(args.epochs):
                for name, sampler in samplers.items():
                    if isinstance(sampler, DistributedSampler):
                        sampler.set_epoch(epoch)
                    seconds, seen = _epoch(loader(sampler))
                    if seen != args.samples:
                        raise RuntimeError(f"{name}: {seen} samples in epoch {epoch}")
                    times[name].append(seconds)
            for k, link in links.items():
                sampler = samplers[f"flexjob lease-{k}"]
                assert isinstance(sampler, ElasticDistributedSampler)
                sampler.report_consumed()  # the last epoch's reports: part of its cost
                calls[k] = link.shards.calls
            for link in links.values():
                link.close()
        finally:
            master.stop()

    base = statistics.median(times["DistributedSampler"])
    print(
        f"data loading: {args.samples} samples x {args.decode_us:g} us decode, "
        f"{args.workers} workers, batch {args.batch}, shards of {args.shard_size}; "
        f"median of {args.epochs} epochs"
    )
    print(f"{'sampler':<22} {'s/epoch':>8} {'overhead':>9} {'goal':>6} {'calls/epoch':>12}")
    for name, values in times.items():
        med = statistics.median(values)
        lease = int(name.rsplit("-", 1)[1]) if name.startswith("flexjob") else None
        per_epoch = f"{calls[lease] / args.epochs:.0f}" if lease is not None else "-"
        over = f"{(med / base - 1) * 100:+.1f}%" if lease is not None else "-"
        print(f"{name:<22} {med:>8.2f} {over:>9} {'<=2%':>6} {per_epoch:>12}")
    print("baseline: torch DistributedSampler(num_replicas=1, rank=0), same loader and data")
    return 0


if __name__ == "__main__":
    sys.exit(main())
