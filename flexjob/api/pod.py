"""The parts of a Kubernetes pod template that flexjob reads; everything else passes through.

Containers keep unknown Kubernetes fields (``OpenModel``) so a template survives a round trip.
Resource quantities stay strings here; ``api.quantity`` parses them.
"""

from typing import Any

from pydantic import Field

from flexjob.api.base import OpenModel

Quantity = str | int | float


class EnvVar(OpenModel):
    name: str
    value: str | None = None


class ResourceRequirements(OpenModel):
    requests: dict[str, Quantity] = Field(default_factory=dict)
    limits: dict[str, Quantity] = Field(default_factory=dict)


class ContainerPort(OpenModel):
    container_port: int
    name: str | None = None
    protocol: str | None = None


class Container(OpenModel):
    name: str = ""
    image: str | None = None
    command: list[str] = Field(default_factory=list)
    args: list[str] = Field(default_factory=list)
    env: list[EnvVar] = Field(default_factory=list)
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    ports: list[ContainerPort] = Field(default_factory=list)
    working_dir: str | None = None


class PodSpec(OpenModel):
    containers: list[Container] = Field(default_factory=list)
    volumes: list[dict[str, Any]] = Field(default_factory=list)
    restart_policy: str | None = None
    node_name: str | None = None
    node_selector: dict[str, str] = Field(default_factory=dict)
    service_account_name: str | None = None
    priority_class_name: str | None = None


class PodTemplateSpec(OpenModel):
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: PodSpec = Field(default_factory=PodSpec)
