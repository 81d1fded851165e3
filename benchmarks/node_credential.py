"""What checking a node's credential costs per call (``rpc.auth.JobCredentials``,
``rpc.server.NodeGate``): the check alone, and whole calls over real gRPC on loopback.

Micro rows: one call of the check, timed over ``--calls`` repetitions: the gate of a master
with a token (the bearer found in the call's metadata, the caller looked up, ``acts_as``)
against the gate of a master without one (the ``NodeRef`` conversion only: what every call did
before), the first sight of a credential (its HMAC-SHA256) and the token check of the
interceptor against the plain token comparison (``rpc.auth.token_matches``) it replaced.
RPC rows: ``LeaseShards`` calls (one shard leased and reported per call) from client threads
for ``--seconds``, against a fresh in-process master with a token (each client presenting its
node's credential) and one without, in alternating order, ``--rounds`` times; the median rate.
Baseline: the same without credentials.

    PYTHONPATH=. python benchmarks/node_credential.py [--calls 200000] [--rounds 5]
        [--threads 8] [--seconds 2]
"""

import argparse
import threading
import time
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory

from benchmarks.call_rate import add_rate_arguments, alternating_medians, calls_per_second
from benchmarks.table import print_table
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import MasterConfig, PersistenceConfig
from flexjob.master.main import serve_master
from flexjob.master.service import MasterService
from flexjob.rpc.auth import (
    AUTHORIZATION,
    JobCredentials,
    bearer,
    new_token,
    node_credential,
    token_matches,
)
from flexjob.rpc.client import MasterClient
from flexjob.rpc.gen import master_pb2 as pb
from flexjob.rpc.server import NodeGate


class _Context:
    """The part of a servicer context the gate reads: the call's metadata."""

    def __init__(self, metadata: tuple[tuple[str, str], ...]) -> None:
        self._metadata = metadata

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def abort(self, code: object, details: str) -> None:
        raise RuntimeError(details)


def _per_call_us(fn: Callable[[], object], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - started) / calls * 1e6


def _micro(calls: int) -> list[list[str]]:
    token = new_token()
    header = bearer(node_credential(token, "worker-3"))
    context = _Context((("user-agent", "grpc-python"), (AUTHORIZATION, header)))
    ref = pb.NodeRef(node_id="worker-3.1", replica_type="worker", replica_index=3)
    credentials = JobCredentials(token)
    guarded, open_gate = NodeGate(credentials), NodeGate()
    plain = bearer(token)
    cases: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
        (
            "gate: the node a call names",
            lambda: guarded.node(ref, context),  # type: ignore[arg-type]
            lambda: open_gate.node(ref, context),  # type: ignore[arg-type]
        ),
        (
            "interceptor: bearer accepted",
            lambda: credentials.caller(header),
            lambda: token_matches(plain, token),
        ),
        (
            "a credential first seen (HMAC)",
            lambda: JobCredentials(token).caller(header),  # nothing remembered yet
            lambda: token_matches(plain, token),
        ),
    ]
    rows = []
    for what, flexjob, base in cases:
        f, b = _per_call_us(flexjob, calls), _per_call_us(base, calls)
        rows.append([what, f"{f:.2f} us", f"{b:.2f} us", f"{f / b:.2f}", f"{f - b:+.2f} us"])
    return rows


def _rate(token: str | None, threads: int, seconds: float, job_dir: Path) -> float:
    config = MasterConfig(
        job_name="bench",
        job_dir=str(job_dir),
        datasets=(Dataset(size=1_000_000, shard_size=1),),
        host_store=False,
        persistence=PersistenceConfig(fsync=False),
    )
    service = MasterService(config)
    server = serve_master(service, token)

    def work(i: int, stop: threading.Event, counts: list[int]) -> None:
        node = f"worker-{i}"
        presented = node_credential(token, node) if token else ""
        with MasterClient(server.address, node, token=presented, shard_stream=False) as c:
            done: list[int] = []
            while not stop.is_set():
                done = [s.shard_id for s in c.lease_shards(1, done=done).shards]
                counts[i] += 1

    try:
        return calls_per_second(work, threads, seconds, warm_up=0.5)
    finally:
        server.stop(0)
        service.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--calls", type=int, default=200_000)
    add_rate_arguments(ap)
    args = ap.parse_args()
    rows = [["workload", "flexjob", "baseline", "ratio", "cost per call"]]
    rows += _micro(args.calls)
    with TemporaryDirectory() as tmp:

        def rate(token: str | None, r: int) -> float:
            return _rate(token, args.threads, args.seconds, Path(tmp) / f"{r}-{bool(token)}")

        g, p = alternating_medians(
            args.rounds, lambda r: rate(new_token(), r), lambda r: rate(None, r)
        )
    cost = (1 / g - 1 / p) * 1e6
    rows.append(
        [
            "LeaseShards calls/s over gRPC",
            f"{g:,.0f}",
            f"{p:,.0f}",
            f"{g / p:.2f}",
            f"{cost:+.1f} us",
        ]
    )
    print_table(rows)
    print(
        "\nbaseline: the same without credentials (micro: a master without a token and the plain"
        f" token comparison; RPC: a master without a token). {args.threads} client threads, "
        f"median of {args.rounds} rounds of {args.seconds} s; cost per call of the RPC row: "
        "the difference of the mean times per call (1/rate), all threads together."
    )


if __name__ == "__main__":
    main()
