"""Network faults on a job across three test hosts (network namespaces, ``tests/support/
hosts.py``): per fault, time to detect, the longest time without a trained sample after it,
samples lost and duplicated, and the final accuracy and throughput against a fault-free run on
the same hosts (the baseline).

Each row is one job (``tests/netfaults/faults.py``: ``flexjob run --address`` on host 0, an
agent on hosts 1 and 2, the chaos script logging every sample), 1 epoch of the digits data.
Needs root (namespaces) and iptables; ``--only N,M`` runs some of the faults.

    PYTHONPATH=. .venv/bin/python benchmarks/network_faults.py [--only 0,2] [--epochs 2]
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
from pathlib import Path

from tests.netfaults.faults import FAULTS, NO_FAULT, FaultResult, run_fault
from tests.support import hosts


def _row(r: FaultResult, base: FaultResult) -> str:
    acc = f"{r.accuracy:.4f}" if r.accuracy is not None else "-"
    ratio = f"{r.accuracy / base.accuracy:.3f}" if r.accuracy and base.accuracy else "-"
    detect = f"{r.detect_s:.1f}" if r.detect_s is not None else "-"
    return (
        f"| {r.fault} | {r.code} | {detect} | {r.resume_s:.1f} | {r.check.lost} | "
        f"{r.check.duplicated} | {acc} | {ratio} | {r.throughput:.1f} | "
        f"{r.throughput / base.throughput:.2f} |"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--only", default="", help="Comma-separated fault indexes (default: all).")
    p.add_argument("--epochs", type=int, default=1)
    a = p.parse_args()
    why = hosts.unavailable()
    if why is not None:
        sys.exit(f"network_faults: no test hosts here: {why}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # tear the hosts down on the way
    chosen = [FAULTS[int(i)] for i in a.only.split(",") if i] or FAULTS
    work = Path(tempfile.mkdtemp(prefix="network-faults-"))
    results = []
    try:
        for i, fault in enumerate([NO_FAULT, *chosen]):
            with hosts.HostNet(3) as net:
                r = run_fault(net, work / f"run{i}", fault, epochs=a.epochs)
            results.append(r)
            print(f"done: {r.fault}: exit {r.code}, {r.check}, {r.seconds:.0f} s", flush=True)
    finally:
        hosts.sweep(include_own=True)
    base = results[0]
    print(
        "\n| fault | exit | detect s | longest stall s | lost | dup | accuracy | "
        "accuracy / fault-free | samples/s | throughput / fault-free |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(_row(r, base))
    print(f"\n(job dirs under {work})")


if __name__ == "__main__":
    main()
