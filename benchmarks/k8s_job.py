"""A whole job on the Kubernetes path: the digits job (examples/specs/digits-elastic.yaml)
through the kopf operator, the API emulator and the process kubelet (tests/e2e/k8s_cluster.py),
from create to Succeeded, and how long the operator's reconcile passes took on the way.

Baseline: the same spec with ``flexjob submit`` on the local platform (same processes, no API
server, no kopf). Run from the repository root:

    PYTHONPATH=$PWD python benchmarks/k8s_job.py --epochs 3 --runs 1
"""

import argparse
import asyncio
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.table import print_table
from tests.e2e.k8s_cluster import SPEC, cluster, digits_job
from tests.support.k8s_fixtures import REPO, image_env

NAME = "digits-elastic"


async def kubernetes_run(epochs: int) -> tuple[float, list[float], str]:
    with tempfile.TemporaryDirectory() as root:
        async with cluster(Path(root)) as c:
            started = time.perf_counter()
            await c.apply_job(digits_job(epochs=epochs))
            phase = await c.wait_phase(NAME, ("Succeeded", "Failed"), 600)
            return time.perf_counter() - started, list(c.operator.queue.durations), phase


def local_run(epochs: int) -> tuple[float, str]:
    import yaml

    with tempfile.TemporaryDirectory() as home:
        spec = Path(home) / "spec.yaml"
        spec.write_text(yaml.safe_dump(digits_job(epochs=epochs)))
        env = {**os.environ, **image_env(), "FLEXJOB_HOME": str(Path(home) / "flexjob")}
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "flexjob", "submit", str(spec)],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
        )
        phase = "Succeeded" if f"job default/{NAME} Succeeded" in out.stdout else "Failed"
        return time.perf_counter() - started, phase


def quantile(values: list[float], q: int) -> float:
    """The ``q``-th percentile (1..99) of ``values``."""
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    for noisy in ("kopf", "aiohttp.access", "flexjob"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    k8s_times, local_times, durations, phases = [], [], [], []
    for _ in range(args.runs):
        seconds, passes, phase = asyncio.run(kubernetes_run(args.epochs))
        k8s_times.append(seconds)
        durations += passes
        phases.append(f"k8s {phase}")
        seconds, phase = local_run(args.epochs)
        local_times.append(seconds)
        phases.append(f"local {phase}")
    k8s, local = statistics.median(k8s_times), statistics.median(local_times)
    rows = [
        (
            "workload",
            "flexjob on Kubernetes (emulated)",
            "baseline (flexjob submit, local)",
            "ratio",
        ),
        (
            f"{SPEC.name}, {args.epochs} epochs: create to Succeeded",
            f"{k8s:.1f} s",
            f"{local:.1f} s",
            f"{k8s / local:.2f}x",
        ),
        ("reconcile passes", str(len(durations)), "", ""),
        ("reconcile pass p50", f"{quantile(durations, 50) * 1000:.1f} ms", "", ""),
        ("reconcile pass p99", f"{quantile(durations, 99) * 1000:.1f} ms", "", ""),
        ("reconcile pass max", f"{max(durations, default=float('nan')) * 1000:.1f} ms", "", ""),
    ]
    print_table(rows)
    print(f"\nmedian of {args.runs} run(s); outcomes: {', '.join(phases)}")


if __name__ == "__main__":
    main()
