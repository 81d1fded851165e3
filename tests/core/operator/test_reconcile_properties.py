"""Properties of core.operator.reconcile over random histories (hypothesis)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flexjob.api import (
    CleanPodPolicy,
    ObjectMeta,
    PodRef,
    ReplicaPhase,
    ReplicaResourceSpec,
    ReplicaType,
    RestartPolicy,
    ScalePlan,
    ScalePlanSpec,
)
from flexjob.core.operator.actions import CreateReplica, DeleteReplica, RecordEvent
from flexjob.core.operator.reconcile import reconcile
from flexjob.core.replicas import Replica
from tests.core.operator.reconcile_sim import Sim, make_job

FOREIGN = [
    Replica("ns", "other", f"other-worker-{i}", ReplicaType.WORKER, i, ReplicaPhase.FAILED, "f")
    for i in range(2)
]

ops = st.lists(
    st.one_of(
        st.just(("step",)),
        st.just(("run",)),
        st.tuples(st.just("finish"), st.integers(0, 5), st.sampled_from([0, 1, 137])),
        st.tuples(st.just("scale"), st.integers(0, 4)),
        st.tuples(st.just("remove"), st.integers(0, 5)),
        st.tuples(st.just("time"), st.integers(1, 50)),
    ),
    max_size=40,
)
jobs = st.builds(
    make_job,
    master=st.booleans(),
    workers=st.integers(1, 3),
    backoff=st.integers(0, 3),
    restart=st.sampled_from([None, *RestartPolicy]),
    clean=st.sampled_from([None, *CleanPodPolicy]),
    deadline=st.sampled_from([None, 100]),
)


def effects(actions: tuple[object, ...]) -> set[tuple[str, str]]:
    """What the actions change (kind and target), events left out."""
    out = set()
    for a in actions:
        if isinstance(a, RecordEvent):
            continue
        request = getattr(a, "request", None)
        out.add((type(a).__name__, str(getattr(request or a, "name", ""))))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job=jobs, history=ops)
def test_reconcile_invariants_hold_over_any_history(job, history) -> None:  # type: ignore[no-untyped-def]
    sim = Sim(job, foreign=list(FOREIGN))
    plans = 0
    for op in history:
        plan = None
        if op[0] == "run":
            sim.run_all()
            continue
        if op[0] == "finish":
            names = sorted(sim.replicas)
            if names:
                sim.finish(names[op[1] % len(names)], op[2])
            continue
        if op[0] == "time":
            sim.advance(op[1])
            continue
        if op[0] in ("scale", "remove"):
            plans += 1
            spec = ScalePlanSpec(owner_job="demo")
            if op[0] == "scale":
                spec.replica_resource_specs = {
                    ReplicaType.WORKER: ReplicaResourceSpec(replicas=op[1])
                }
            else:
                spec.remove_pods = [PodRef(name=f"demo-worker-{op[1]}")]
            plan = ScalePlan(metadata=ObjectMeta(name=f"p{plans}", namespace="ns"), spec=spec)
        observed = [*sim.replicas.values(), *sim.foreign]
        services = list(sim.services.values())
        first = reconcile(sim.job, observed, sim.now, services=services, plan=plan)
        again = reconcile(
            sim.job.model_copy(update={"status": first.status}),
            observed,
            sim.now,
            services=services,
            plan=plan,
        )
        # Idempotent: the same observation again changes nothing and asks nothing new.
        assert again.status == first.status
        assert effects(again.actions) <= effects(first.actions)
        deleted = {a.name for a in first.actions if isinstance(a, DeleteReplica)}
        created = [a.request.name for a in first.actions if isinstance(a, CreateReplica)]
        assert not deleted & {r.name for r in FOREIGN}, "deleted a replica of another job"
        assert len(created) == len(set(created)), "created a name twice in one round"
        assert not set(created) & set(sim.replicas), "created a name that is taken"
        assert first.status.restart_count <= (job.spec.backoff_limit or 0)
        was_finished = sim.job.status is not None and sim.job.status.phase.finished
        sim.step(plan)
        if was_finished:
            assert sim.phase.finished
