"""The master's TCPStore start-up, each kind (``master.tcp_store_check``): what a master pays
before its store serves, measured in a fresh process from its start to "serving" (wall
seconds) and the CPU-seconds of it and its children by its exit. Rows: flexjob's store with
the check's answer cached (every master but the first per machine and torch), flexjob's
store on a first start (the check runs: torch's client in a subprocess), torch's own
TCPStore (the baseline: what the master served before flexjob had its own). Called by
``startup.py`` (``--only store``).
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

START = r"""
import socket, sys
from pathlib import Path
from flexjob.master.tcp_store_check import StoreChoice, choose_store, serve_store
kind, cache = sys.argv[1], Path(sys.argv[2])
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); sock.listen(16)
choice = StoreChoice(False, "benchmark") if kind == "torch" else choose_store(cache)
server = serve_store(sock.detach(), "127.0.0.1", choice)
print("serving", choice.ours, flush=True)
server.stop()
"""

KINDS = {
    "flexjob's store, check cached": "cached",
    "flexjob's store, first start (check runs)": "first",
    "torch's TCPStore (baseline)": "torch",
}


def _once(kind: str, cache: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", START, kind, str(cache)],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    serving = time.monotonic() - start
    proc.wait()
    assert line.startswith("serving"), line
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return serving, cpu


def store_table(reps: int) -> None:
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in KINDS}
    with tempfile.TemporaryDirectory(prefix="flexjob-store-") as tmp:
        warm = Path(tmp) / "warm"
        _once("cached", warm)  # fills the cache the "cached" rows read
        for rep in range(reps):
            for name, kind in KINDS.items():
                cache = warm if kind == "cached" else Path(tmp) / f"cold-{rep}"
                results[name].append(_once(kind, cache))
    base_wall, base_cpu = (
        statistics.median(r[i] for r in results["torch's TCPStore (baseline)"]) for i in (0, 1)
    )
    print(
        f"{'master store start-up (median)':<44} {'wall s':>7} {'ratio':>7} {'CPU s':>7}"
        f" {'ratio':>7}"
    )
    for name, runs in results.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(
            f"{name:<44} {wall:>7.2f} {wall / base_wall:>6.2f}x {cpu:>7.2f} {cpu / base_cpu:>6.2f}x"
        )
    print(f"ratio: against torch's TCPStore; {reps} reps each, fresh process each")
