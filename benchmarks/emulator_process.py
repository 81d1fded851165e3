"""The Kubernetes API emulator (tests/support/k8s_emulator.py) in a process of its own, as a real
API server is: benchmarks run the operator in their own process against it over HTTP, so the
emulator's work never waits on (or delays) the operator's event loop.

``EmulatorProcess`` starts ``python benchmarks/emulator_process.py`` and reads the URL it
serves on (127.0.0.1, a free port). With ``kubelet=True`` the child also stands in for the
kubelets: every pod that is not Running yet is reported Running at once (a status update in
the store, each waking the watches as a kubelet's request would). ``counts(replicas)`` asks the
child over its stdin/stdout for how many pods exist, how many are Running and how many
ElasticJobs' status counts ``replicas`` workers active and none pending: the benchmark polls
these without listing 5,000 pods over HTTP. ``requests()``: the requests served by verb and
resource; ``cpu_seconds()``: the child's CPU time.
"""

import argparse
import asyncio
import collections
import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import kmock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.k8s_emulator import K8sEmulator, _parse_path
from tests.support.k8s_fixtures import ELASTICJOBS, SCALEPLANS
from tests.support.k8s_store import StoreError

MERGE = "application/merge-patch+json"
KUBELET_PERIOD = 0.05


class EmulatorProcess:
    """``with EmulatorProcess(kubelet=...) as emulator:`` a child serving the emulator until
    the block ends; ``url`` is where."""

    def __init__(self, kubelet: bool = False) -> None:
        command = [sys.executable, __file__] + (["--kubelet"] if kubelet else [])
        self._proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.url = str(self._request(None)["url"])

    def _request(self, line: str | None) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        if line is not None:
            self._proc.stdin.write(line + "\n")
            self._proc.stdin.flush()
        answer = self._proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"the emulator process exited ({self._proc.wait(10)})")
        reply: dict[str, Any] = json.loads(answer)
        return reply

    def counts(self, replicas: int) -> dict[str, int]:
        """Pods, Running pods, and jobs whose status counts all ``replicas`` workers active."""
        return {k: int(v) for k, v in self._request(f"counts {replicas}").items()}

    def requests(self) -> dict[str, int]:
        """The requests served so far by verb and resource (``emulator_process.requests``)."""
        return {k: int(v) for k, v in self._request("requests").items()}

    def cpu_seconds(self) -> float:
        """CPU time the emulator process has used so far (its own threads)."""
        return float(self._request("cpu")["seconds"])

    def __enter__(self) -> "EmulatorProcess":
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()  # EOF: the child stops serving and exits
        try:
            self._proc.wait(15)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(5)


def counts(emulator: K8sEmulator, replicas: int) -> dict[str, int]:
    pods = emulator.store.objects.get(emulator.kind("", "v1", "pods"), {}).values()
    running = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
    caught_up = 0
    for body in emulator.store.objects.get(ELASTICJOBS, {}).values():
        workers = ((body.get("status") or {}).get("replicaStatuses") or {}).get("worker") or {}
        caught_up += workers.get("active") == replicas and not workers.get("pending")
    return {"pods": len(pods), "running": running, "caught_up": caught_up}


def requests(emulator: K8sEmulator) -> dict[str, int]:
    """How many requests the emulator served, by verb and resource (``PATCH
    elasticjobs/status``; a watch is ``WATCH``); the kubelet stand-in sends none."""
    tally: collections.Counter[str] = collections.Counter()
    for request in emulator._requests:
        parsed = _parse_path(request.url.path)
        if parsed is None:
            continue
        _, _, _, plural, name, subresource = parsed
        verb = str(getattr(request.method, "value", request.method))
        if verb == "GET" and request.params.get("watch") in ("true", "1"):
            verb = "WATCH"
        elif verb == "GET" and name is None:
            verb = "LIST"
        tally[f"{verb} {plural}{'/' + subresource if subresource else ''}"] += 1
    return dict(tally)


async def kubelet(emulator: K8sEmulator) -> None:
    """Report every new pod Running at once, as its kubelet's status update would. Follows the
    store's event log (as a kubelet follows its watch), never scanning every pod."""
    pods = emulator.kind("", "v1", "pods")
    running = {"status": {"phase": "Running"}}
    log, position = emulator.store.events, 0
    while True:
        new, position = log[position:], len(log)
        for event in new:
            meta = event.body["metadata"]
            if event.kind == pods and event.type == "ADDED":
                with contextlib.suppress(StoreError):  # deleted meanwhile
                    emulator.store.patch(
                        pods, meta.get("namespace"), meta["name"], running, MERGE, "status"
                    )
                    await emulator.notify()  # each update wakes the watches, as a request would
                await asyncio.sleep(0)  # and waits its turn among the other requests
        await asyncio.sleep(KUBELET_PERIOD)


def answer(reply: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()


async def serve(with_kubelet: bool) -> None:
    loop = asyncio.get_running_loop()
    commands = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(commands), sys.stdin)
    async with K8sEmulator() as emulator, kmock.Server(emulator):
        emulator.declare(ELASTICJOBS)
        emulator.declare(SCALEPLANS)
        helper = asyncio.create_task(kubelet(emulator)) if with_kubelet else None
        answer({"url": emulator.base_url})
        while line := (await commands.readline()).decode().split():
            if line[0] == "counts":
                answer(counts(emulator, int(line[1])))
            elif line[0] == "requests":
                answer(requests(emulator))
            elif line[0] == "cpu":
                answer({"seconds": time.process_time()})
            else:
                answer({"error": f"unknown {line[0]!r}; allowed: counts REPLICAS, requests, cpu"})
        if helper is not None:
            helper.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubelet", action="store_true", help="report new pods Running")
    asyncio.run(serve(parser.parse_args().kubelet))


if __name__ == "__main__":
    main()
