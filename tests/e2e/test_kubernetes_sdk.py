"""The Python SDK's Kubeflow-style calls on Kubernetes (issue 37, item 13): a ``FlexjobClient``
built from a kubeconfig and its context, as a notebook points Kubeflow's ``TrainingClient`` at
a cluster, drives real jobs through the emulator, the kopf operator and the process kubelet:
``wait_for_job_conditions`` calls back and returns the job, ``get_job_conditions`` and the
``is_job_*`` calls follow its phase, ``get_job_logs`` reads every pod or the ones picked (and
their last lines), ``update_job`` scales a running job and names what cannot change, a pod
that failed once is restarted (the job's conditions keep Restarting), and a job that failed
says so."""

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flexjob.api import ElasticJob, JobPhase
from flexjob.api.errors import UnavailableError
from flexjob.client import FlexjobClient, JobFailedError
from tests.e2e.k8s_cluster import IMAGE, cluster
from tests.e2e.sdk_calls import PRINTS, check_update_job, command_job, waits_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
CONTEXT = "emulator"  # the context of the emulator's kubeconfig (tests/support/k8s_emulator)


def job(name: str, code: str, workers: int = 2, backoff: int | None = None) -> dict[str, Any]:
    """``command_job`` in the flexjob image (the kubelet runs ``python`` from this venv)."""
    return command_job(name, code, workers, backoff, image=IMAGE, python="python")


@dataclass
class Finished:
    """The cluster's kubeconfig, and the job ``printed`` (two pods that printed two lines
    each and succeeded) with what the ``wait_for_job_conditions`` callback saw of it."""

    kubeconfig: Path
    returned: ElasticJob
    seen: list[ElasticJob]

    def client(self) -> FlexjobClient:
        return FlexjobClient(config_file=self.kubeconfig, context=CONTEXT)


@contextlib.contextmanager
def running_cluster(root: Path) -> Iterator[Path]:
    """The emulated cluster (``tests.e2e.k8s_cluster``) on its own thread and event loop, so
    that the test calls the synchronous SDK as a user does; yields its kubeconfig."""
    loop = asyncio.new_event_loop()
    started: concurrent.futures.Future[Path] = concurrent.futures.Future()
    stop = asyncio.Event()

    async def main() -> None:
        try:
            async with cluster(root) as c:
                started.set_result(c.kubelet.kubeconfig)
                await stop.wait()
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc)
            raise

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    try:
        yield started.result(timeout=90)
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(60)
        assert not thread.is_alive(), "the cluster did not stop within 60 s"
        loop.close()


@pytest.fixture(scope="module")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with running_cluster(tmp_path_factory.mktemp("cluster")) as path:
        yield path


@pytest.fixture(scope="module")
def finished(kubeconfig: Path) -> Finished:
    seen: list[ElasticJob] = []
    gate = kubeconfig.parent / "printed.gate"  # its pods print once the job was seen Running
    with FlexjobClient(config_file=kubeconfig, context=CONTEXT) as client:
        client.create_job(job("printed", waits_for(gate) + PRINTS))
        client.wait_for_job_conditions(
            "printed", expected_conditions={"Running"}, wait_timeout=120, polling_interval=0.2
        )
        gate.touch()
        returned = client.wait_for_job_conditions(
            "printed",
            expected_conditions={"Succeeded"},
            wait_timeout=120,
            polling_interval=0.2,
            callback=seen.append,
        )
    return Finished(kubeconfig, returned, seen)


def test_wait_for_job_conditions_calls_back_and_returns_the_succeeded_job(
    finished: Finished,
) -> None:
    assert finished.returned.status is not None
    assert finished.returned.status.phase is JobPhase.SUCCEEDED
    assert finished.seen and finished.seen[-1].status == finished.returned.status


def test_conditions_and_is_job_calls_follow_the_phase(finished: Finished) -> None:
    with finished.client() as client:
        conditions = client.get_job_conditions("printed")
        assert [c.type for c in conditions if c.status == "True"] == [JobPhase.SUCCEEDED]
        assert JobPhase.RUNNING in [c.type for c in conditions]  # it ran before it ended
        assert client.is_job_created("printed") and client.is_job_succeeded("printed")
        assert not client.is_job_running("printed")
        assert not client.is_job_failed("printed") and not client.is_job_restarting("printed")


def test_get_job_logs_reads_every_pod_prefixed(finished: Finished) -> None:
    with finished.client() as client:
        every = list(client.get_job_logs("printed"))
    assert sorted(every) == sorted(
        f"[worker-{i}] {word} from {i}\n" for i in "01" for word in ("first", "last")
    )


def test_get_job_logs_picks_by_type_index_selector_and_tail(finished: Finished) -> None:
    with finished.client() as client:
        picked = list(client.get_job_logs("printed", replica_type="worker", replica_index=1))
        selected = list(client.get_job_logs("printed", selector="replica-index=0"))
        last = list(client.get_job_logs("printed", "worker-0", tail=1))
    assert picked == ["first from 1\n", "last from 1\n"]
    assert selected == ["first from 0\n", "last from 0\n"]
    assert last == ["last from 0\n"]


def test_an_unknown_context_is_refused_naming_it(finished: Finished) -> None:
    with pytest.raises(UnavailableError, match="no-such-context"):
        FlexjobClient(config_file=finished.kubeconfig, context="no-such-context")


def test_a_failed_job_raises_from_wait_and_is_job_failed(kubeconfig: Path) -> None:
    code = "import sys; print('giving up', flush=True); sys.exit(3)"
    with FlexjobClient(config_file=kubeconfig, context=CONTEXT) as client:
        client.create_job(job("fails", code, workers=1, backoff=0))
        with pytest.raises(JobFailedError, match="job default/fails failed"):
            client.wait_for_job_conditions("fails", wait_timeout=120, polling_interval=0.2)
        assert client.is_job_failed("fails") and not client.is_job_succeeded("fails")
        assert list(client.get_job_logs("fails")) == ["giving up\n"]
        client.delete_job("fails")


def test_a_pod_that_failed_once_is_restarted_and_its_conditions_say_so(
    kubeconfig: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "failed-once"
    code = (
        "import pathlib, sys\n"
        f"p = pathlib.Path({str(marker)!r})\n"
        "if not p.exists(): p.touch(); sys.exit(1)\n"
        "print('second try', flush=True)\n"
    )
    with FlexjobClient(config_file=kubeconfig, context=CONTEXT) as client:
        client.create_job(job("retried", code, workers=1, backoff=2))
        done = client.wait_for_job_conditions("retried", wait_timeout=120, polling_interval=0.2)
        assert done.status is not None and done.status.restart_count == 1
        assert JobPhase.RESTARTING in [c.type for c in client.get_job_conditions(job=done)]
        assert not client.is_job_restarting(job=done) and client.is_job_succeeded("retried")
        client.delete_job("retried")


def test_update_job_scales_a_running_job_and_names_what_cannot_change(
    kubeconfig: Path, tmp_path: Path
) -> None:
    with FlexjobClient(config_file=kubeconfig, context=CONTEXT) as client:
        done = tmp_path / "done"
        check_update_job(client, job("grows", waits_for(done), workers=1), done)
