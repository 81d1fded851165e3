"""What each replica type does in a job: the one table of role traits, keyed by ``ReplicaType``.

For: every rule that depends on a replica's role — validation (a job needs a training type),
reconcile (which type is created first, gets a service, decides success, may be scaled by a
ScalePlan, counts against ``backoffLimit``), the scaling target (which type the allocator and
the server resize), the master's rendezvous bounds and the optimizer. It also answers what
code elsewhere would otherwise name a role for (the job's training type, the types that run
the master and the PS, the token holders, DI's API fields): no code outside ``api/`` names a
particular role (``tests/test_roles_in_api.py``). Adding a replica type means adding it to
``ReplicaType`` and one row here. Not for: counts and bounds of a particular job
(``api.bounds``).
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from flexjob.api import names
from flexjob.api.enums import ReplicaType


@dataclass(frozen=True, slots=True)
class RoleTraits:
    """The behaviour of one replica type.

    ``trains``: does the training work; a job needs at least one training type, the master's
    rendezvous bounds come from the first one, and with no master the job succeeds when every
    replica of its training types succeeded.
    ``scale_rank``: the order in which a job's types are picked as *the* elastic type that the
    allocator and the server resize (lowest first); ``None``: only when no ranked type exists.
    ``scalable``: ScalePlans and the scaling APIs may change its count (else the spec's count
    always holds).
    ``controls_job``: created before every other type, always gets a service (on the master
    port unless its container declares one), others get its address, and its success is the
    job's success.
    ``counts_against_backoff``: a failed replica's restart uses up ``backoffLimit``.
    ``drives_job`` (DI's coordinator): the job's phase follows it — Running while it runs,
    Succeeded or Failed when it ends (it is never restarted) — and the job's ``on_request``
    types are created only as it asks the server for them.
    ``on_request``: in a job a ``drives_job`` type drives, starts with no replica (its template
    is the recipe, not a count); a failed one is replaced without counting against
    ``backoffLimit`` or moving the job's phase.
    ``port_env`` / ``default_port``: the variable that tells a replica its port, and the port
    its service gets on Kubernetes when its container declares none (DI's defaults).
    ``builtin_command``: the ``flexjob`` command a replica of this type runs when its main
    container names no command of its own (``core.operator.job_master``); ``None``: it must name
    one. ``world_rank``: its place in a plain torch world (a job with no master whose training types
    all have one, ``core.operator.torch_world``): the replicas of the lowest take the first ranks,
    its replica 0 is rank 0, the world's ``MASTER_ADDR`` (Kubeflow's PyTorchJob ``Master``, then
    ``Worker``); ``None``: a role that forms no torch world (DI's learners and collectors).
    """

    trains: bool = False
    scale_rank: int | None = None
    scalable: bool = True
    controls_job: bool = False
    counts_against_backoff: bool = True
    drives_job: bool = False
    on_request: bool = False
    port_env: str | None = None
    default_port: int | None = None
    builtin_command: str | None = None
    world_rank: int | None = None
    tf_task: str | None = None
    tf_outside_cluster: bool = False
    runs_master: bool = False
    serves_parameters: bool = False
    holds_token: bool = False
    di_field: str | None = None
    fronts: ReplicaType | None = None


def _on_request(scale_rank: int, port_env: str, default_port: int, di_field: str) -> RoleTraits:
    """A DI-engine role that trains, started when the coordinator asks for it (``on_request``),
    serving on the port ``port_env`` names, listed in DI's ``di_field``."""
    return RoleTraits(
        trains=True,
        scale_rank=scale_rank,
        on_request=True,
        port_env=port_env,
        default_port=default_port,
        di_field=di_field,
    )


ROLE_TRAITS: Mapping[ReplicaType, RoleTraits] = MappingProxyType(
    {
        ReplicaType.MASTER: RoleTraits(
            scalable=False,
            controls_job=True,
            builtin_command="master",
            runs_master=True,
            holds_token=True,
        ),
        ReplicaType.WORKER: RoleTraits(trains=True, scale_rank=0, world_rank=1, tf_task="worker"),
        ReplicaType.COLLECTOR: _on_request(
            2, names.ENV_COLLECTOR_PORT, names.DEFAULT_COLLECTOR_PORT, "collectors"
        ),
        ReplicaType.LEARNER: _on_request(
            1, names.ENV_LEARNER_PORT, names.DEFAULT_LEARNER_PORT, "learners"
        ),
        ReplicaType.PS: RoleTraits(
            scale_rank=3, builtin_command="ps", serves_parameters=True, tf_task="ps"
        ),
        ReplicaType.CHIEF: RoleTraits(trains=True, world_rank=0, tf_task="chief"),
        ReplicaType.EVALUATOR: RoleTraits(tf_task="evaluator", tf_outside_cluster=True),
        ReplicaType.COORDINATOR: RoleTraits(
            scalable=False,
            controls_job=True,
            drives_job=True,
            port_env=names.ENV_COORDINATOR_PORT,
            default_port=names.DEFAULT_COORDINATOR_PORT,
        ),
        ReplicaType.AGGREGATOR: RoleTraits(
            on_request=True,
            port_env=names.ENV_AGGREGATOR_PORT,
            default_port=names.DEFAULT_AGGREGATOR_PORT,
            di_field="aggregators",
            fronts=ReplicaType.LEARNER,
        ),
    }
)


def traits(rtype: ReplicaType) -> RoleTraits:
    return ROLE_TRAITS[rtype]


def _the_one(trait: str) -> ReplicaType:
    """The one type whose ``trait`` is set (the table has exactly one)."""
    (found,) = (t for t, r in ROLE_TRAITS.items() if getattr(r, trait))
    return found


#: Replica types that do the training work; a job needs at least one of them.
TRAINING_TYPES: frozenset[ReplicaType] = frozenset(t for t, r in ROLE_TRAITS.items() if r.trains)

#: The scalable types in the order the scaling target is picked from.
SCALE_ORDER: tuple[ReplicaType, ...] = tuple(
    sorted(
        (t for t, r in ROLE_TRAITS.items() if r.scale_rank is not None),
        key=lambda t: ROLE_TRAITS[t].scale_rank or 0,
    )
)


def controlling_type(types: Iterable[ReplicaType]) -> ReplicaType | None:
    """The type among ``types`` that controls the job (the master), or None."""
    return next((t for t in types if ROLE_TRAITS[t].controls_job), None)


def driving_type(types: Iterable[ReplicaType]) -> ReplicaType | None:
    """The type among ``types`` that drives the job (DI's coordinator), or None."""
    return next((t for t in types if ROLE_TRAITS[t].drives_job), None)


def runs_di_tasks(types: Iterable[ReplicaType]) -> bool:
    """Whether a job of ``types`` runs DI-engine v2 tasks (DI Orchestrator v2): it has a DI
    role (collectors, learners) and nothing drives it (no coordinator: that is v1)."""
    kept = list(types)
    return driving_type(kept) is None and any(ROLE_TRAITS[t].di_field for t in kept)


def on_request_types(types: Iterable[ReplicaType]) -> list[ReplicaType]:
    """``types`` created only on request: the ``on_request`` ones when a type among ``types``
    drives the job, else none."""
    kept = list(types)
    if driving_type(kept) is None:
        return []
    return [t for t in kept if ROLE_TRAITS[t].on_request]


#: DI-engine's task types that train (``on_request`` roles that also run as v2 tasks).
DI_TASK_TYPES = frozenset(t for t, r in ROLE_TRAITS.items() if r.on_request and r.trains)


def success_types(types: Iterable[ReplicaType]) -> list[ReplicaType]:
    """The types whose replicas must all succeed for a job without a controlling replica to
    succeed: the training types, except that DI-engine tasks with nothing driving them (a
    DIJob v2: "Succeeded when all workers have") make every type count, evaluators too.
    Every type counts when none trains."""
    kept = list(types)
    if driving_type(kept) is None and DI_TASK_TYPES.intersection(kept):
        return kept
    return [t for t in kept if ROLE_TRAITS[t].trains] or kept


def scalable_types(types: Iterable[ReplicaType]) -> list[ReplicaType]:
    """``types`` whose count may change, in the given order."""
    return [t for t in types if ROLE_TRAITS[t].scalable]


def creation_order(types: Iterable[ReplicaType]) -> list[ReplicaType]:
    """``types`` with the controlling type first, then in the given order."""
    return sorted(types, key=lambda t: 0 if ROLE_TRAITS[t].controls_job else 1)


def world_types(types: Iterable[ReplicaType]) -> list[ReplicaType]:
    """The types among ``types`` that form a plain torch world, in ``world_rank`` order; ``[]``
    when a training type among them forms none (a DI job)."""
    kept = [t for t in types if ROLE_TRAITS[t].trains]
    if any(ROLE_TRAITS[t].world_rank is None for t in kept):
        return []
    return sorted(kept, key=lambda t: ROLE_TRAITS[t].world_rank or 0)


def tf_types(types: Iterable[ReplicaType]) -> list[ReplicaType]:
    """The types among ``types`` that have a TensorFlow task (``tf_task``), those listed in the
    cluster first (in the table's order: worker, ps, chief), then the evaluator."""
    kept = set(types)
    ordered = [t for t, r in ROLE_TRAITS.items() if r.tf_task is not None and t in kept]
    return sorted(ordered, key=lambda t: ROLE_TRAITS[t].tf_outside_cluster)


def tf_lead_type(types: Iterable[ReplicaType]) -> ReplicaType | None:
    """The type whose replica 0 decides a TensorFlow job's success (Kubeflow TFJob's default
    success policy: the chief, else worker 0): the first of the plain-world order."""
    ranked = world_types(t for t in types if ROLE_TRAITS[t].tf_task is not None)
    return ranked[0] if ranked else None


def _rank(rtype: ReplicaType) -> int:
    rank = ROLE_TRAITS[rtype].scale_rank
    return len(ROLE_TRAITS) if rank is None else rank


def scaling_target(types: Iterable[ReplicaType]) -> ReplicaType | None:
    """The one type among ``types`` the allocator and the scaling APIs resize: the lowest
    ``scale_rank``, else the first scalable one; None when none is scalable."""
    return min(scalable_types(types), key=_rank, default=None)


def main_training_type(types: Iterable[ReplicaType]) -> ReplicaType | None:
    """The training type among ``types`` whose bounds are the job's node bounds: the lowest
    ``scale_rank``, else the first training one; None when none trains."""
    return min((t for t in types if ROLE_TRAITS[t].trains), key=_rank, default=None)


#: The type that runs flexjob's job master.
MASTER_TYPE: ReplicaType = _the_one("runs_master")
#: The parameter-server type.
PS_TYPE: ReplicaType = _the_one("serves_parameters")
#: The type that drives a DI job (its coordinator).
DRIVER_TYPE: ReplicaType = _the_one("drives_job")
#: The type that stands in front of another (DI's aggregator), and the type it fronts.
FRONT_TYPE: ReplicaType = _the_one("fronts")
FRONTED_TYPE: ReplicaType = ROLE_TRAITS[FRONT_TYPE].fronts or FRONT_TYPE
#: The replica types given the job's token (the master's only); every other replica gets its
#: node's credential, and a PS replica also its PS secret (``rpc.ps_auth``).
TOKEN_HOLDERS: frozenset[ReplicaType] = frozenset(
    t for t, r in ROLE_TRAITS.items() if r.holds_token
)
#: The type of a node that names none (``flexjob run``'s nodes, an agent without
#: ``FLEXJOB_REPLICA_TYPE``, a ``NodeRef`` whose type is not one we know): the first scaling
#: type.
DEFAULT_TYPE: ReplicaType = SCALE_ORDER[0]
#: DI-engine's v1alpha2 replica API: its list fields and the type each lists, in the table's
#: order (collectors, learners, aggregators).
DI_FIELDS: Mapping[str, ReplicaType] = MappingProxyType(
    {r.di_field: t for t, r in ROLE_TRAITS.items() if r.di_field is not None}
)


def command_of(rtype: ReplicaType) -> str:
    """The ``flexjob`` command a replica of ``rtype`` runs (its ``builtin_command``: the name
    the CLI registers it under); ``ValueError`` for a type that has none."""
    command = ROLE_TRAITS[rtype].builtin_command
    if command is None:
        raise ValueError(f"replica type {rtype.value} runs no flexjob command of its own")
    return command


def type_named(name: str) -> ReplicaType:
    """The type ``name`` (a wire or environment value) names; ``DEFAULT_TYPE`` when it names
    none we know (an old or foreign caller)."""
    known = ReplicaType._value2member_map_.get(name)
    return known if isinstance(known, ReplicaType) else DEFAULT_TYPE


def job_training_type(types: Iterable[ReplicaType]) -> ReplicaType:
    """The type a planner and the optimizer size as the job's workers: the main training type
    (``main_training_type``: a PS job's and an all-reduce job's workers, a DI job's learners),
    else ``DEFAULT_TYPE`` (a job that names none, e.g. ``flexjob run``'s)."""
    return main_training_type(types) or DEFAULT_TYPE
