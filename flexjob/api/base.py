"""The base pydantic model: camelCase on the wire (like Kubernetes), snake_case in Python.

``ApiModel`` forbids unknown fields; ``OpenModel`` keeps them, for objects that Kubernetes
defines and we only pass through (pod specs, containers, volumes).
"""

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class ApiModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        use_enum_values=False,
        validate_assignment=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict as it appears in YAML: camelCase, no unset optional fields."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class OpenModel(ApiModel):
    model_config = ConfigDict(extra="allow")
