"""Shuffled datasets: what opening an epoch and handing out one shard cost the master.

For each size in ``--sizes``, a ``ShardManager`` over a shuffled ``RangeSplitter`` (shards of
``--shard-size``) hands out its first shard (which opens the epoch) and then ``--leases``
more; timed, with the peak memory the process gained. Baseline: the shuffle flexjob had
before (``random.shuffle`` of a list of every index, what an epoch then cost up front),
timed for the sizes up to ``--baseline-max`` only (10^8 takes about a minute and 4 GiB),
after every flexjob row (the peak memory column is the process's, so flexjob's comes first).
Not part of the test suite.

    PYTHONPATH=. python benchmarks/shuffle_epoch.py [--sizes 1e6,5e6,1e8] [--shard-size 128]
"""

from __future__ import annotations

import argparse
import random
import resource
import time

from benchmarks.table import print_table
from flexjob.core.training.shards import ShardManager
from flexjob.core.training.splitters import RangeSplitter


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def flexjob_epoch(size: int, shard_size: int, leases: int) -> tuple[float, float]:
    """Seconds to open the epoch (first shard) and microseconds per later shard."""
    manager = ShardManager(RangeSplitter(size, shard_size, shuffle=True, seed=1), epochs=1)
    start = time.perf_counter()
    first = manager.get_shard("w0")
    opened = time.perf_counter() - start
    assert first is not None and len(first.spec.sample_indices()) == min(shard_size, size)
    start = time.perf_counter()
    for _ in range(leases):
        shard = manager.get_shard("w0")
        assert shard is not None
        shard.spec.sample_indices()
    return opened, (time.perf_counter() - start) / leases * 1e6


def baseline_epoch(size: int) -> float:
    """Seconds for the old up-front shuffle of ``size`` indices."""
    start = time.perf_counter()
    order = list(range(size))
    random.Random("flexjob:1:0").shuffle(order)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e6,5e6,1e8")
    parser.add_argument("--shard-size", type=int, default=128)
    parser.add_argument("--leases", type=int, default=2000)
    parser.add_argument("--baseline-max", type=float, default=5e6)
    args = parser.parse_args()
    rows = [
        ["samples", "flexjob open s", "flexjob us/shard", "peak MiB", "baseline open s", "ratio"]
    ]
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    measured = []
    for size in sizes:  # all of flexjob's first: the process's peak memory is theirs alone
        opened, per_shard = flexjob_epoch(size, args.shard_size, args.leases)
        measured.append((size, opened, per_shard, _rss_mib()))
    for size, opened, per_shard, peak in measured:
        base = baseline_epoch(size) if size <= args.baseline_max else None
        rows.append(
            [
                f"{size:.0e}",
                f"{opened:.3f}",
                f"{per_shard:.0f}",
                f"{peak:.0f}",
                "-" if base is None else f"{base:.2f}",
                "-" if base is None else f"{base / opened:.0f}x faster",
            ]
        )
    print_table(rows)


if __name__ == "__main__":
    main()
