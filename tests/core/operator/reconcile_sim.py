"""A tiny in-memory cluster for reconcile tests: applies actions the way a platform would."""

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from flexjob.api import (
    CleanPodPolicy,
    Container,
    ElasticJob,
    ElasticJobSpec,
    JobPhase,
    ObjectMeta,
    PodSpec,
    PodTemplateSpec,
    ReplicaPhase,
    ReplicaSpec,
    ReplicaType,
    RestartPolicy,
    ScalePlan,
)
from flexjob.api.pod import ContainerPort
from flexjob.core.operator.actions import (
    Action,
    CreateReplica,
    CreateService,
    DeleteJob,
    DeleteReplica,
    DeleteService,
    RecordEvent,
    UpdateScalePlan,
)
from flexjob.core.operator.job_master import JobMasterConfig
from flexjob.core.operator.reconcile import reconcile
from flexjob.core.replicas import Replica, Service

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def template(*ports: int) -> PodTemplateSpec:
    container = Container(
        name="main",
        image="img",
        command=["python", "-c", "pass"],
        ports=[ContainerPort(container_port=p) for p in ports],
    )
    return PodTemplateSpec(spec=PodSpec(containers=[container]))


def make_job(
    *,
    master: bool = True,
    workers: int = 2,
    backoff: int | None = 3,
    restart: RestartPolicy | None = None,
    exit_codes: list[int] | None = None,
    clean: CleanPodPolicy | None = None,
    suspend: bool | None = None,
    deadline: int | None = None,
    ttl: int | None = None,
    ps: int = 0,
) -> ElasticJob:
    specs: dict[ReplicaType, ReplicaSpec] = {}
    if master:
        specs[ReplicaType.MASTER] = ReplicaSpec(replicas=1, template=template())
    specs[ReplicaType.WORKER] = ReplicaSpec(
        replicas=workers, restart_policy=restart, restart_exit_codes=exit_codes, template=template()
    )
    if ps:
        specs[ReplicaType.PS] = ReplicaSpec(replicas=ps, template=template(2222))
    return ElasticJob(
        metadata=ObjectMeta(name="demo", namespace="ns"),
        spec=ElasticJobSpec(
            replica_specs=specs,
            backoff_limit=backoff,
            clean_pod_policy=clean,
            suspend=suspend,
            active_deadline_seconds=deadline,
            ttl_seconds_after_finished=ttl,
            envs={"USER_VAR": "1"},
        ),
    )


def rank0_service(job: ElasticJob) -> Service:
    """The service of worker-0, rank 0 of a job with no master (``core.operator.torch_world``):
    what a
    test of worker creates alone gives ``reconcile`` so that the workers are due at once."""
    name = f"{job.name}-worker-0"
    return Service(job.namespace, job.name, name, name, f"{name}:23456")


@dataclass
class Sim:
    """The job, what runs, and the clock; ``step`` reconciles once and applies the actions."""

    job: ElasticJob
    now: datetime = T0
    replicas: dict[str, Replica] = field(default_factory=dict)
    services: dict[str, Service] = field(default_factory=dict)
    history: list[tuple[Action, ...]] = field(default_factory=list)
    plan_updates: list[UpdateScalePlan] = field(default_factory=list)
    job_deleted: bool = False
    foreign: list[Replica] = field(default_factory=list)
    job_master: JobMasterConfig | None = None
    server_url: str | None = None
    _uid: int = 0

    @property
    def phase(self) -> JobPhase:
        assert self.job.status is not None
        return self.job.status.phase

    def step(self, plan: ScalePlan | None = None) -> tuple[Action, ...]:
        observed = [*self.replicas.values(), *self.foreign]
        actions, status = reconcile(
            self.job,
            observed,
            self.now,
            services=list(self.services.values()),
            plan=plan,
            job_master=self.job_master,
            server_url=self.server_url,
        )
        self.job = self.job.model_copy(update={"status": status})
        for action in actions:
            self._apply(action)
        self.history.append(actions)
        return actions

    def settle(self, rounds: int = 6) -> None:
        """Reconcile until no non-event actions are left, marking new replicas Running."""
        for _ in range(rounds):
            self.run_all()
            acts = [a for a in self.step() if not isinstance(a, RecordEvent)]
            if not acts:
                return
        raise AssertionError("did not settle")

    def run_all(self) -> None:
        for name, r in self.replicas.items():
            if r.phase is ReplicaPhase.PENDING:
                self.replicas[name] = replace(r, phase=ReplicaPhase.RUNNING)

    def finish(self, name: str, code: int) -> None:
        phase = ReplicaPhase.SUCCEEDED if code == 0 else ReplicaPhase.FAILED
        self.replicas[name] = replace(self.replicas[name], phase=phase, exit_code=code)

    def ask(self, **counts: int) -> None:
        """Set desired counts as the server does when a coordinator asks (``status.replicas``)."""
        assert self.job.status is not None
        status = self.job.status.model_copy(deep=True)
        status.replicas.update({ReplicaType(t): n for t, n in counts.items()})
        self.job = self.job.model_copy(update={"status": status})

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    def _apply(self, action: Action) -> None:
        if isinstance(action, CreateReplica):
            req = action.request
            if req.name not in self.replicas:
                self._uid += 1
                self.replicas[req.name] = req.pending(f"uid-{self._uid}", req.node)
        elif isinstance(action, DeleteReplica):
            self.replicas.pop(action.name, None)
        elif isinstance(action, CreateService):
            req = action.request
            self.services[req.name] = Service(
                req.namespace, req.job, req.name, req.replica, f"{req.name}:{req.port}"
            )
        elif isinstance(action, DeleteService):
            self.services.pop(action.name, None)
        elif isinstance(action, UpdateScalePlan):
            self.plan_updates.append(action)
        elif isinstance(action, DeleteJob):
            self.job_deleted = True


#: The word ``kinds`` writes for each kind of non-event action.
VERBS: dict[type[Action], str] = {
    CreateReplica: "create",
    DeleteReplica: "delete",
    CreateService: "service",
    DeleteService: "unservice",
    DeleteJob: "deletejob",
    UpdateScalePlan: "plan",
}


def kinds(actions: tuple[Action, ...]) -> list[str]:
    """Non-event actions as short strings, e.g. ``create demo-worker-0``."""
    out = []
    for a in actions:
        verb = VERBS.get(type(a))
        if verb is None:
            continue
        if isinstance(a, CreateReplica | CreateService):
            out.append(f"{verb} {a.request.name}")
        elif isinstance(a, UpdateScalePlan):
            out.append(f"{verb} {a.name} {a.phase.value}")
        else:
            out.append(f"{verb} {a.name}")
    return out
