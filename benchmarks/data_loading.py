"""Data loading: what the elastic sampler costs per epoch against a plain ``DistributedSampler``.

One training process (a world of one), a map-style dataset whose ``__getitem__`` spends
``--decode-us`` of CPU per sample (a realistic decode), and a ``DataLoader`` with ``--workers``
worker processes and batches of ``--batch``. Baseline: torch's ``DistributedSampler``
(``num_replicas=1, rank=0``) in the same loader over the same data. flexjob: an
``ElasticDistributedSampler`` fed by a real master (a child process, over gRPC on loopback),
once per lease setting in ``--leases`` (``FLEXJOB_SHARD_LEASE``: ``auto``, the default
adaptive lease, or a fixed number of shards per call), shards of ``--shard-size``.
Every epoch is timed end to end (every batch consumed, the shard reports included), in wall
time and in CPU time (this process, the loader's workers and the master: robust to what else
runs on a shared machine). The samplers take turns epoch by epoch, ``--rounds`` rounds in a
rotating order; each epoch is compared with the baseline's epoch of the same round, and the
medians and ranges of those overheads are printed (goal: <= 2%), with the baseline run twice a
round as the noise floor, the machine's load and the master calls per epoch. Not part of the
test suite.

    PYTHONPATH=. python benchmarks/data_loading.py [--samples 10000] [--decode-us 300]
        [--workers 2] [--rounds 7] [--leases auto,1,8]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

import torch
from torch.utils.data import DataLoader, DistributedSampler, Sampler

from benchmarks.proc_cpu import children_cpu_s, process_cpu_s
from flexjob.api import names
from flexjob.core.training.master_config import MasterConfig
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


def _epoch(loader: Iterable[torch.Tensor], master_pid: int) -> tuple[float, float, int]:
    """Wall seconds to consume one epoch, the CPU seconds it took (this process, the loader's
    workers, which exit with the epoch, and the master), and the samples it held."""
    cpu0 = _own_and_children_cpu() + process_cpu_s(master_pid)
    start, seen = time.perf_counter(), 0
    for batch in loader:
        seen += len(batch)
    wall = time.perf_counter() - start
    return wall, _own_and_children_cpu() + process_cpu_s(master_pid) - cpu0, seen


def _own_and_children_cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime + children_cpu_s()


def _spread(values: list[float]) -> str:
    """The median and the range of ``values`` (fractions) as percentages."""
    med = statistics.median(values) * 100
    return f"{med:+.1f}% [{min(values) * 100:+.1f}..{max(values) * 100:+.1f}]"


BASE, AGAIN = "DistributedSampler", "DistributedSampler again"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--samples", type=int, default=10_000)
    ap.add_argument("--decode-us", type=float, default=300.0, help="CPU per sample")
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--shard-size", type=int, default=64, help="the sampler's default")
    ap.add_argument("--rounds", type=int, default=7, help="epochs of each sampler")
    ap.add_argument(
        "--leases", default="auto,1,8", help="FLEXJOB_SHARD_LEASE values (auto: the default)"
    )
    args = ap.parse_args()
    leases = [k.strip() for k in args.leases.split(",") if k.strip()]
    data = DecodedDataset(args.samples, args.decode_us)
    load = os.getloadavg()

    def loader(sampler: Sampler[int]) -> DataLoader[torch.Tensor]:
        return DataLoader(
            data,
            batch_size=args.batch,
            sampler=sampler,
            num_workers=args.workers,
            persistent_workers=False,
        )

    with tempfile.TemporaryDirectory(prefix="flexjob-bench-") as tmp:
        config = MasterConfig(job_name="bench", job_dir=str(Path(tmp) / "job"), host_store=False)
        master = spawn_master(config)
        master_pid = master.process.pid
        os.environ[names.ENV_MASTER] = master.address
        os.environ[names.ENV_NODE_ID] = "bench-0"
        try:
            links: dict[str, MasterLink] = {}
            # The baseline runs twice a round: how far two runs of the same thing differ is
            # the noise the overheads must be read against.
            samplers: dict[str, Sampler[int]] = {
                name: DistributedSampler(data, num_replicas=1, rank=0, shuffle=True, seed=0)
                for name in (BASE, AGAIN)
            }
            for k in leases:
                os.environ[names.ENV_SHARD_LEASE] = k
                links[k] = MasterLink(node_identity())
                samplers[f"flexjob lease-{k}"] = ElasticDistributedSampler(
                    data,
                    shard_size=args.shard_size,
                    epochs=args.rounds,
                    name=f"lease-{k}",
                    source=links[k],
                )
            wall: dict[str, list[float]] = {name: [] for name in samplers}
            cpu: dict[str, list[float]] = {name: [] for name in samplers}
            calls: dict[str, int] = {}
            order = list(samplers)
            for epoch in range(args.rounds):
                # Each round starts with the next sampler: none always runs first or last.
                for name in order[epoch % len(order) :] + order[: epoch % len(order)]:
                    sampler = samplers[name]
                    if isinstance(sampler, DistributedSampler):
                        sampler.set_epoch(epoch)
                    seconds, cpu_s, seen = _epoch(loader(sampler), master_pid)
                    if seen != args.samples:
                        raise RuntimeError(f"{name}: {seen} samples in epoch {epoch}")
                    wall[name].append(seconds)
                    cpu[name].append(cpu_s)
            for k, link in links.items():
                sampler = samplers[f"flexjob lease-{k}"]
                assert isinstance(sampler, ElasticDistributedSampler)
                sampler.report_consumed()  # the last epoch's reports: part of its cost
                calls[k] = link.shards.calls
            for link in links.values():
                link.close()
        finally:
            master.stop()

    print(
        f"data loading: {args.samples} samples x {args.decode_us:g} us decode, "
        f"{args.workers} workers, batch {args.batch}, shards of {args.shard_size}; "
        f"{args.rounds} rounds, each sampler one epoch a round, in rotating order"
    )
    print(
        f"{'sampler':<25} {'s/epoch':>8} {'wall overhead [min..max]':>27} {'goal':>6} "
        f"{'CPU overhead [min..max]':>26} {'calls/epoch':>12}"
    )
    for name in samplers:
        med = statistics.median(wall[name])
        lease = name.rsplit("-", 1)[1] if name.startswith("flexjob") else None
        per_epoch = f"{calls[lease] / args.rounds:.0f}" if lease is not None else "-"
        if name == BASE:
            over, cpu_over, goal = "-", "-", ""
        else:  # per round against the baseline's epoch of the same round
            over = _spread([w / b - 1 for w, b in zip(wall[name], wall[BASE], strict=True)])
            cpu_over = _spread([c / b - 1 for c, b in zip(cpu[name], cpu[BASE], strict=True)])
            goal = "<=2%" if lease is not None else "noise"
        print(f"{name:<25} {med:>8.2f} {over:>27} {goal:>6} {cpu_over:>26} {per_epoch:>12}")
    print(
        "baseline: torch DistributedSampler(num_replicas=1, rank=0), same loader and data; "
        f"'{AGAIN}' is the same baseline again (its overhead is the noise floor). Overheads are "
        "medians over rounds of each epoch against the baseline's epoch in the same round; CPU "
        "counts this process, the loader's workers and the master. Load average (1 min) at the "
        f"start {load[0]:.2f}, at the end {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
