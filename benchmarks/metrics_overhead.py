"""What the master's RPC latency histogram costs: the same master with and without the
``RpcLatency`` interceptor, called by client threads over real gRPC on loopback.

Each round serves a fresh in-process master both ways, in alternating order, and counts
``GetProgress`` calls (a cheap RPC, so the interceptor's share is as large as it gets) for
``--seconds``. Baseline: the same master without the interceptor. Prints the median of the
rounds.

    PYTHONPATH=. python benchmarks/metrics_overhead.py [--rounds 5] [--threads 8] [--seconds 2]
"""

import argparse
import threading

from benchmarks.call_rate import add_rate_arguments, alternating_medians, calls_per_second
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import MasterConfig
from flexjob.master.observing import RpcLatency
from flexjob.master.service import MasterService
from flexjob.rpc.client import MasterClient
from flexjob.rpc.server import serve


def rate(interceptors: list[RpcLatency], threads: int, seconds: float) -> float:
    config = MasterConfig(
        job_name="bench", datasets=(Dataset(size=1000, shard_size=10),), host_store=False
    )
    server = serve(MasterService(config), interceptors=interceptors, max_workers=threads)

    def call(i: int, stop: threading.Event, counts: list[int]) -> None:
        with MasterClient(server.address, f"worker-{i}") as c:
            c.get_progress()  # connect before the clock starts
            while not stop.is_set():
                c.get_progress()
                counts[i] += 1

    try:
        return calls_per_second(call, threads, seconds, warm_up=0.3)
    finally:
        server.stop(0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_rate_arguments(ap)
    a = ap.parse_args()
    b, t = alternating_medians(
        a.rounds,
        lambda _: rate([], a.threads, a.seconds),
        lambda _: rate([RpcLatency()], a.threads, a.seconds),
    )
    print(f"{'workload':34} {'flexjob':>10} {'baseline':>22} {'ratio':>6}")
    baseline = f"{b:,.0f} (no interceptor)"
    print(f"{'GetProgress calls/s, RPC histogram':34} {t:10,.0f} {baseline:>22} {t / b:6.2f}")
    print(f"rounds: {a.rounds}, threads: {a.threads}, {a.seconds}s each; medians")


if __name__ == "__main__":
    main()
