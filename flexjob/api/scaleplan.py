"""The ``ScalePlan`` custom resource and the master's ``ResourcePlan``.

A ResourcePlan is what a planner (master or brain) decides; a ScalePlan is that decision written
down for the operator, the only writer of replicas, to carry out.
"""

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import Field

from flexjob.api.base import ApiModel
from flexjob.api.enums import ReplicaType, ScalePlanPhase
from flexjob.api.job import ReplicaCount, ResourceSpec
from flexjob.api.meta import ObjectMeta


class ReplicaResourceSpec(ApiModel):
    replicas: ReplicaCount
    resource: ResourceSpec = Field(default_factory=ResourceSpec)


class PodRef(ApiModel):
    """One replica named in a plan: created, removed or migrated."""

    name: str = ""
    type: ReplicaType = ReplicaType.WORKER
    id: int | None = None
    rank_index: int | None = None
    resource: ResourceSpec = Field(default_factory=ResourceSpec)


class ScalePlanSpec(ApiModel):
    owner_job: str
    replica_resource_specs: dict[ReplicaType, ReplicaResourceSpec] = Field(default_factory=dict)
    create_pods: list[PodRef] = Field(default_factory=list)
    remove_pods: list[PodRef] = Field(default_factory=list)
    migrate_pods: list[PodRef] = Field(default_factory=list)
    ps_hosts: list[str] = Field(default_factory=list)
    manual_scaling: bool = False


class ScalePlanStatus(ApiModel):
    phase: ScalePlanPhase = ScalePlanPhase.PENDING
    create_time: str | None = None
    finish_time: str | None = None
    message: str = ""


class ScalePlan(ApiModel):
    api_version: Literal["flexjob.dev/v1alpha1"] = "flexjob.dev/v1alpha1"
    kind: Literal["ScalePlan"] = "ScalePlan"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ScalePlanSpec
    status: ScalePlanStatus | None = None


def manual_scale_plan(
    job: str,
    namespace: str,
    counts: Mapping[ReplicaType, int],
    remove: Sequence[str] = (),
    *,
    stamp_ms: int,
) -> ScalePlan:
    """A person's request (``flexjob scale``, the SDK) to run ``counts`` replicas of ``job``
    and remove the replicas named in ``remove``; named ``<job>-scale-<stamp_ms>``."""
    return ScalePlan(
        metadata=ObjectMeta(name=f"{job}-scale-{stamp_ms}", namespace=namespace),
        spec=ScalePlanSpec(
            owner_job=job,
            replica_resource_specs={t: ReplicaResourceSpec(replicas=n) for t, n in counts.items()},
            remove_pods=[PodRef(name=r) for r in remove],
            manual_scaling=True,
        ),
    )


class ResourcePlan(ApiModel):
    """A planner's decision: replica counts and resources per type, and why."""

    job: str = ""
    replica_resources: dict[ReplicaType, ReplicaResourceSpec] = Field(default_factory=dict)
    #: Replicas to relaunch with new resources (e.g. after an OOM), by replica name.
    node_resources: dict[str, ResourceSpec] = Field(default_factory=dict)
    reason: str = ""

    @property
    def empty(self) -> bool:
        return not self.replica_resources and not self.node_resources
