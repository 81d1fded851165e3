"""di-server's read cache: requests per second of ``GET /v1alpha2/replicas`` (a DI coordinator's
poll: the namespace's jobs, then the job's services and replicas) and of ``GET
/v2alpha1/{job}/replicas``, answered from the server's read cache (``server.read_cache``,
``--ttl`` seconds) against every request reading the platform (ttl 0), over the local platform
(SQLite job store, real replica processes kept running by the local operator loop), with the
platform reads per request from the server's own metrics (``flexjob_server_platform_reads``).
``--jobs`` jobs of ``--workers`` replicas each sit in the namespace (each v1 request lists
them all). Setups alternate, ``--rounds`` rounds of ``--seconds`` each; medians printed. The
app is called in this process (``TestClient``), one client thread. Run from the repo root:

    PYTHONPATH=$PWD python benchmarks/di_server_cache.py --jobs 20 --workers 4
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from flexjob.api import JobPhase
from flexjob.operator.local.loop import LocalJobLoop
from flexjob.platform.local import LocalPlatform
from flexjob.server.app import create_app
from flexjob.server.metrics import ServerMetrics
from tests.support.local_jobs import local_job, wait_for_file_then_exit
from tests.support.polling import wait_until

ROUTES = {
    "v1alpha2 GET by coordinator": (
        "/v1alpha2/replicas",
        {"namespace": "default", "coordinator": "job-0"},
    ),
    "v2alpha1 GET replicas": ("/v2alpha1/default.job-0.1/replicas", None),
}


def _start(platform: LocalPlatform, stop: Path, jobs: int, workers: int) -> list[LocalJobLoop]:
    loops = []
    for j in range(jobs):
        name = f"job-{j}"
        code = wait_for_file_then_exit(stop, timeout=600)
        platform.create_job(local_job(name, master=None, worker=code, workers=workers))
        loops.append(LocalJobLoop(platform, "default", name, interval=0.05))
    for loop in loops:

        def running(loop: LocalJobLoop = loop) -> bool:
            return loop.step().job.status.phase is JobPhase.RUNNING  # type: ignore[union-attr]

        wait_until(running, timeout=60)
    return loops


def _rate(platform: LocalPlatform, ttl: float, route: str, seconds: float) -> tuple[float, float]:
    """Requests per second and platform reads per request."""
    path, params = ROUTES[route]
    with TestClient(create_app(platform, cache_ttl=ttl)) as client:
        n, end = 0, time.perf_counter() + seconds
        start = time.perf_counter()
        while time.perf_counter() < end:
            resp = client.get(path, params=params)
            assert resp.status_code == 200, resp.text
            n += 1
        elapsed = time.perf_counter() - start
        metrics: ServerMetrics = client.app.state.metrics  # type: ignore[attr-defined]
        return n / elapsed, metrics.reads("platform") / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=20)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--ttl", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        platform = LocalPlatform(Path(tmp) / "home")
        stop = Path(tmp) / "stop"
        loops = _start(platform, stop, args.jobs, args.workers)
        try:
            print(f"{args.jobs} jobs x {args.workers} replicas, local platform, ttl {args.ttl}s")
            print(
                f"{'route':30} {'no cache req/s':>15} {'cache req/s':>12} {'ratio':>6} "
                f"{'reads/req no cache':>19} {'reads/req cache':>16}"
            )
            for route in ROUTES:
                rows: dict[float, list[tuple[float, float]]] = {0.0: [], args.ttl: []}
                for _ in range(args.rounds):
                    for ttl in rows:
                        rows[ttl].append(_rate(platform, ttl, route, args.seconds))
                base = statistics.median(r for r, _ in rows[0.0])
                cached = statistics.median(r for r, _ in rows[args.ttl])
                base_reads = statistics.median(p for _, p in rows[0.0])
                cached_reads = statistics.median(p for _, p in rows[args.ttl])
                print(
                    f"{route:30} {base:15.0f} {cached:12.0f} {cached / base:6.1f} "
                    f"{base_reads:19.2f} {cached_reads:16.3f}"
                )
        finally:
            stop.touch()
            for loop in loops:
                loop.run()
            platform.close()


if __name__ == "__main__":
    main()
