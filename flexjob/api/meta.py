"""Kubernetes object metadata, typed for the fields flexjob uses and open for the rest."""

from typing import Any

from pydantic import Field

from flexjob.api.base import OpenModel
from flexjob.api.names import DEFAULT_NAMESPACE


class ObjectMeta(OpenModel):
    name: str = ""
    namespace: str = DEFAULT_NAMESPACE
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    uid: str | None = None
    generation: int | None = None
    resource_version: str | None = None
    creation_timestamp: str | None = None
    owner_references: list[dict[str, Any]] = Field(default_factory=list)
    finalizers: list[str] = Field(default_factory=list)
