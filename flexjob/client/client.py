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
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from flexjob.api import ElasticJob, JobPhase, ReplicaType, ScalePlan
from flexjob.api.defaults import apply_defaults
from flexjob.api.errors import ClientError, InvalidSpecError
from flexjob.api.job import JobCondition
from flexjob.api.load import job_from_dict, load_job
from flexjob.api.names import DEFAULT_NAMESPACE
from flexjob.api.roles import DEFAULT_TYPE
from flexjob.api.scaleplan import manual_scale_plan
from flexjob.client.config import apply_config
from flexjob.client.logs import LogQuery, job_logs
from flexjob.platform.contract import Platform, Replica
from flexjob.platform.registry import open_platform

JobSource = ElasticJob | Mapping[str, Any] | str | Path


class JobFailedError(ClientError, RuntimeError):
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


def spec_changes(
    stored: ElasticJob, wanted: ElasticJob
) -> tuple[dict[ReplicaType, int], list[str]]:
    """What ``wanted`` changes in ``stored``'s spec: the replica counts (by type) and the
    paths of every other field that differs."""
    counts: dict[ReplicaType, int] = {}
    others: list[str] = []
    old, new = stored.spec.replica_specs, wanted.spec.replica_specs
    for rtype in sorted(set(old) | set(new), key=lambda t: t.value):
        if rtype not in old or rtype not in new:
            others.append(f"replicaSpecs.{rtype.value}")
            continue
        count = new[rtype].replicas
        if count is not None and count != old[rtype].replicas:
            counts[rtype] = count
        a = old[rtype].model_dump(by_alias=True, exclude={"replicas"})
        b = new[rtype].model_dump(by_alias=True, exclude={"replicas"})
        others += [f"replicaSpecs.{rtype.value}.{k}" for k in a if a[k] != b.get(k)]
    a = stored.spec.model_dump(by_alias=True, exclude={"replica_specs"})
    b = wanted.spec.model_dump(by_alias=True, exclude={"replica_specs"})
    others += [k for k in a if a[k] != b.get(k)]
    return counts, others


class FlexjobClient:
    """One platform, one default namespace.

    ``platform``: ``"local"`` (default; ``$FLEXJOB_PLATFORM``), ``"kubernetes"``, or a
    ``Platform``; ``home``: the local platform's folder (default ``$FLEXJOB_HOME`` or
    ``~/.flexjob``); ``config_file`` and ``context`` (as Kubeflow's ``TrainingClient``): the
    kubeconfig and its context for Kubernetes (default ``$KUBECONFIG``, its current context).
    """

    def __init__(
        self,
        platform: str | Platform | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        home: str | Path | None = None,
        config_file: str | Path | None = None,
        context: str | None = None,
    ) -> None:
        apply_config()  # ~/.config/flexjob/config.yaml under the environment variables
        self.platform: Platform
        if config_file is not None or context is not None:
            if platform not in (None, "kubernetes"):
                raise InvalidSpecError("config_file, context: only for platform 'kubernetes'")
            from flexjob.platform.kubernetes import KubernetesPlatform

            kubeconfig = None if config_file is None else str(config_file)
            self.platform = KubernetesPlatform(kubeconfig=kubeconfig, context=context)
        elif isinstance(platform, str | None) and home is not None:
            if (platform or "local") != "local":
                raise ValueError("home: only the local platform has a home folder")
            from flexjob.platform.local import LocalPlatform

            self.platform = LocalPlatform(home)
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
        return self._wait(name, namespace, wanted, timeout, poll_interval, raise_on_failure)

    def _wait(
        self,
        name: str,
        namespace: str | None,
        wanted: tuple[JobPhase, ...],
        timeout: float,
        poll_interval: float,
        raise_on_failure: bool,
        callback: Callable[[ElasticJob], object] | None = None,
    ) -> ElasticJob:
        deadline = time.monotonic() + timeout
        while True:
            job = self.get_job(name, namespace=namespace)
            if callback is not None:
                callback(job)
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

    # ---- Kubeflow TrainingClient's calls ----
    def get_job_conditions(
        self,
        name: str | None = None,
        *,
        namespace: str | None = None,
        job: ElasticJob | None = None,
    ) -> list[JobCondition]:
        """The job's conditions (one per phase it was in; the current one has status
        ``"True"``); of ``job`` when given, else fetched by ``name``."""
        if job is None:
            if name is None:
                raise InvalidSpecError("get_job_conditions: give name or job")
            job = self.get_job(name, namespace=namespace)
        return list(job.status.conditions) if job.status is not None else []

    def _is(self, phases: tuple[JobPhase, ...], name: str | None, **where: Any) -> bool:
        conditions = self.get_job_conditions(name, **where)
        return any(c.type in phases and c.status == "True" for c in conditions)

    def is_job_created(
        self,
        name: str | None = None,
        *,
        namespace: str | None = None,
        job: ElasticJob | None = None,
    ) -> bool:
        """True once the operator took the job in (it has a phase)."""
        return bool(self.get_job_conditions(name, namespace=namespace, job=job))

    def is_job_running(
        self,
        name: str | None = None,
        *,
        namespace: str | None = None,
        job: ElasticJob | None = None,
    ) -> bool:
        return self._is((JobPhase.RUNNING,), name, namespace=namespace, job=job)

    def is_job_restarting(
        self,
        name: str | None = None,
        *,
        namespace: str | None = None,
        job: ElasticJob | None = None,
    ) -> bool:
        """Restarting (a replica failed with restarts left) or Rescheduling (its replicas
        change): Kubeflow's Restarting."""
        rest = (JobPhase.RESTARTING, JobPhase.RESCHEDULING)
        return self._is(rest, name, namespace=namespace, job=job)

    def is_job_failed(
        self,
        name: str | None = None,
        *,
        namespace: str | None = None,
        job: ElasticJob | None = None,
    ) -> bool:
        return self._is((JobPhase.FAILED,), name, namespace=namespace, job=job)

    def wait_for_job_conditions(
        self,
        name: str,
        *,
        namespace: str | None = None,
        expected_conditions: Iterable[JobPhase | str] = (JobPhase.SUCCEEDED,),
        wait_timeout: float = 600.0,
        polling_interval: float = 15.0,
        callback: Callable[[ElasticJob], object] | None = None,
    ) -> ElasticJob:
        """As Kubeflow's: poll every ``polling_interval`` s until the job is in one of
        ``expected_conditions``, calling ``callback(job)`` at each poll; returns the job.
        ``JobFailedError`` (a ``RuntimeError``) when it failed and Failed is not expected,
        ``TimeoutError`` after ``wait_timeout`` s."""
        wanted = job_phases(expected_conditions)
        fails = JobPhase.FAILED not in wanted
        return self._wait(name, namespace, wanted, wait_timeout, polling_interval, fails, callback)

    def update_job(
        self, job: JobSource, name: str | None = None, *, namespace: str | None = None
    ) -> ElasticJob:
        """Change a running job to ``job``: what can change while it runs is its replica
        counts, carried out as a manual ScalePlan (``scale_job``); ``InvalidSpecError`` names
        any other field that differs. Returns the job as stored."""
        model = self._model(job)
        name = name or model.name
        ns = namespace or model.metadata.namespace or self.namespace
        stored = self.get_job(name, namespace=ns)
        counts, others = spec_changes(stored, model)
        if others:
            raise InvalidSpecError(
                f"update_job: {', '.join(others)} cannot change while job {ns}/{name} exists; "
                "only replicaSpecs.TYPE.replicas can (delete and create it to change the rest)"
            )
        if counts:
            self.scale_job(name, {t.value: n for t, n in counts.items()}, namespace=ns)
        return self.get_job(name, namespace=ns)

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
            counts[DEFAULT_TYPE] = worker
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
        replica: str | None = None,
        *,
        replica_type: ReplicaType | str | None = None,
        replica_index: int | None = None,
        selector: str = "",
        follow: bool = False,
        tail: int | None = None,
        since_seconds: float | None = None,
        previous: bool = False,
        timeout: float | None = None,
        namespace: str | None = None,
    ) -> Iterator[str]:
        """Lines of the job's output: of one ``replica`` (``worker-0``, ``master-0``), or of
        every replica that ``replica_type``, ``replica_index`` and the label ``selector`` pick
        (all by default), each line then prefixed ``[worker-1] ``. ``tail``: the last lines of
        each; ``since_seconds``, ``previous``: as ``kubectl logs`` (Kubernetes); ``follow``:
        keep yielding until they end (or ``timeout``)."""
        query = LogQuery(
            replica=replica,
            replica_type=None if replica_type is None else ReplicaType(replica_type),
            replica_index=replica_index,
            selector=selector,
            follow=follow,
            tail=tail,
            since_seconds=since_seconds,
            previous=previous,
            timeout=timeout,
        )
        return job_logs(self.platform, namespace or self.namespace, name, query)

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
