"""``FlexjobClient``: submit, get, wait for, scale, stream the logs of and delete jobs.

In the spirit of Kubeflow's ``TrainingClient``, on the local platform (processes on this
machine) and on Kubernetes. On the local platform no operator runs by itself: ``create_job``
starts the job's background operator (the same one ``flexjob submit --detach`` starts), so the
job runs on even after the notebook's kernel stops; on Kubernetes the cluster's operator does.
Jobs are ``ElasticJob`` models; specs in any supported format (a file, YAML text, a dict) are
read with ``flexjob.api.load`` and defaulted as ``flexjob submit`` does.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from flexjob.api import ElasticJob, JobPhase, ReplicaType, ScalePlan
from flexjob.api.defaults import apply_defaults
from flexjob.api.errors import FlexjobError, InvalidSpecError
from flexjob.api.load import job_from_dict, load_job
from flexjob.api.names import DEFAULT_NAMESPACE
from flexjob.api.scaleplan import manual_scale_plan
from flexjob.client.config import apply_config
from flexjob.platform.api import Platform, Replica
from flexjob.platform.registry import open_platform

JobSource = ElasticJob | Mapping[str, Any] | str | Path


class JobFailedError(FlexjobError, RuntimeError):
    """``wait_for_job`` saw the job end in Failed (a ``FlexjobError``; still a
    ``RuntimeError`` for code written before it was one)."""

    def __init__(self, job: ElasticJob) -> None:
        self.job = job
        status = job.status
        why = ""
        if status is not None and status.conditions:
            last = status.conditions[-1]
            why = f": {last.reason}: {last.message}" if last.message else f": {last.reason}"
        super().__init__(f"job {job.namespace}/{job.name} failed{why}")


def job_phases(phases: Iterable[JobPhase | str]) -> tuple[JobPhase, ...]:
    """``phases`` as ``JobPhase``s (a name such as ``"Running"`` is taken as the phase);
    ``InvalidSpecError`` naming the allowed ones for any other string."""
    try:
        return tuple(JobPhase(p) for p in ([phases] if isinstance(phases, str) else phases))
    except ValueError as exc:
        allowed = ", ".join(p.value for p in JobPhase)
        raise InvalidSpecError(f"phases: {exc}; allowed: {allowed}") from None


class FlexjobClient:
    """One platform, one default namespace.

    ``platform``: ``"local"`` (default; ``$FLEXJOB_PLATFORM``), ``"kubernetes"``, or a
    ``Platform``; ``home``: the local platform's folder (default ``$FLEXJOB_HOME`` or
    ``~/.flexjob``).
    """

    def __init__(
        self,
        platform: str | Platform | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        home: str | Path | None = None,
    ) -> None:
        apply_config()  # ~/.config/flexjob/config.yaml under the environment variables
        if isinstance(platform, str | None) and home is not None:
            if (platform or "local") != "local":
                raise ValueError("home: only the local platform has a home folder")
            from flexjob.platform.local import LocalPlatform

            self.platform: Platform = LocalPlatform(home)
        elif isinstance(platform, str | None):
            self.platform = open_platform(platform)
        else:
            self.platform = platform
        self.namespace = namespace

    def close(self) -> None:
        self.platform.close()

    def __enter__(self) -> FlexjobClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- jobs ----
    def create_job(self, job: JobSource, *, namespace: str | None = None) -> ElasticJob:
        """Store ``job`` (an ``ElasticJob``, a spec file, YAML/JSON text or a dict of any
        supported kind) and have it run; returns the stored job. ``SpecError`` lists every
        problem of a bad spec; ``AlreadyExistsError`` if the name is taken."""
        model = self._model(job)
        if namespace or not model.metadata.namespace:
            model.metadata.namespace = namespace or self.namespace
        created = self.platform.create_job(model)
        if self.platform.name == "local":
            from flexjob.operator.local import runner as local_runner
            from flexjob.platform.local import LocalPlatform

            assert isinstance(self.platform, LocalPlatform)
            local_runner.start_detached(self.platform, created.namespace, created.name)
        return created

    def get_job(self, name: str, *, namespace: str | None = None) -> ElasticJob:
        """The job with its status; ``NotFoundError`` if there is none."""
        return self.platform.get_job(namespace or self.namespace, name)

    def list_jobs(self, *, namespace: str | None = None) -> list[ElasticJob]:
        return self.platform.list_jobs(namespace or self.namespace)

    def get_job_phase(self, name: str, *, namespace: str | None = None) -> JobPhase | None:
        """Pending, Starting, Running, ... (None before the operator first saw the job)."""
        status = self.get_job(name, namespace=namespace).status
        return status.phase if status is not None else None

    def is_job_succeeded(self, name: str, *, namespace: str | None = None) -> bool:
        return self.get_job_phase(name, namespace=namespace) is JobPhase.SUCCEEDED

    def wait_for_job(
        self,
        name: str,
        *,
        namespace: str | None = None,
        phases: Iterable[JobPhase | str] = (JobPhase.SUCCEEDED, JobPhase.FAILED),
        timeout: float = 600.0,
        poll_interval: float = 0.5,
        raise_on_failure: bool = True,
    ) -> ElasticJob:
        """Poll until the job reaches one of ``phases`` (default: finished); returns it.
        ``JobFailedError`` when it failed (unless ``raise_on_failure`` is False),
        ``TimeoutError`` after ``timeout`` seconds. A phase is a ``JobPhase`` or its name
        (``"Succeeded"``); ``InvalidSpecError`` names an unknown one."""
        wanted = job_phases(phases)
        deadline = time.monotonic() + timeout
        while True:
            job = self.get_job(name, namespace=namespace)
            phase = job.status.phase if job.status is not None else None
            if phase is JobPhase.FAILED and raise_on_failure:
                raise JobFailedError(job)
            if phase in wanted:
                return job
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"job {job.namespace}/{name} is {phase.value if phase else 'new'} after "
                    f"{timeout}s; waiting for {', '.join(p.value for p in wanted)}"
                )
            time.sleep(poll_interval)

    def scale_job(
        self,
        name: str,
        replicas: Mapping[ReplicaType | str, int] | None = None,
        *,
        worker: int | None = None,
        remove: tuple[str, ...] = (),
        namespace: str | None = None,
    ) -> ScalePlan:
        """Ask the job's operator for other replica counts (``worker=3`` or
        ``replicas={"ps": 2}``) or to remove replicas (``remove=("worker-1",)``), as a
        ScalePlan; returns the stored plan."""
        ns = namespace or self.namespace
        counts = {ReplicaType(t): n for t, n in (replicas or {}).items()}
        if worker is not None:
            counts[ReplicaType.WORKER] = worker
        if not counts and not remove:
            raise ValueError("scale_job: give replicas, worker or remove")
        bad = {t.value: n for t, n in counts.items() if n < 0}
        if bad:
            raise ValueError(f"scale_job: replica counts must be >= 0, got {bad}")
        self.get_job(name, namespace=ns)
        plan = manual_scale_plan(name, ns, counts, remove, stamp_ms=time.time_ns() // 1_000_000)
        return self.platform.create_scale_plan(plan)

    def list_replicas(self, name: str, *, namespace: str | None = None) -> list[Replica]:
        """The job's replicas (pods or processes) with their phases."""
        return self.platform.list_replicas(namespace or self.namespace, name)

    def get_job_logs(
        self,
        name: str,
        replica: str = "worker-0",
        *,
        follow: bool = False,
        timeout: float | None = None,
        namespace: str | None = None,
    ) -> Iterator[str]:
        """Lines of a replica's output (``worker-0``, ``master-0``, ...); with ``follow``, keep
        yielding until the replica ends (or ``timeout``)."""
        full = replica if replica.startswith(f"{name}-") else f"{name}-{replica}"
        return self.platform.read_logs(
            namespace or self.namespace, full, follow=follow, timeout=timeout
        )

    def delete_job(self, name: str, *, namespace: str | None = None) -> None:
        """Delete the job; its replicas are stopped."""
        self.platform.delete_job(namespace or self.namespace, name)

    @staticmethod
    def _model(job: JobSource) -> ElasticJob:
        if isinstance(job, ElasticJob):
            return apply_defaults(job.model_copy(deep=True))
        if isinstance(job, Mapping):
            return apply_defaults(job_from_dict(dict(job)))
        return apply_defaults(load_job(job))
