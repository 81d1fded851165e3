"""The base pydantic model: camelCase on the wire (like Kubernetes), snake_case in Python.

``ApiModel`` forbids unknown fields; ``OpenModel`` keeps them, for objects that Kubernetes
defines and we only pass through (pod specs, containers, volumes). ``to_wire`` is the compact
form written to YAML: unset and empty-default fields are left out, so that loading it back gives
an equal model.
"""

import functools
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


def _compact(value: Any, dumped: Any) -> Any:
    """Replace nested models in ``dumped`` (their ``model_dump``) by their compact form."""
    if isinstance(value, ApiModel):
        return value.to_wire()
    if isinstance(value, dict) and isinstance(dumped, dict):
        return {d: _compact(v, dumped[d]) for v, d in zip(value.values(), dumped, strict=True)}
    if isinstance(value, list) and isinstance(dumped, list):
        return [_compact(v, d) for v, d in zip(value, dumped, strict=True)]
    return dumped


@functools.cache
def _default(model: type[BaseModel], name: str) -> Any:
    """A field's default, its factory called once: only compared with, never handed out
    (pydantic inspects the factory's signature on every ``get_default``)."""
    return model.model_fields[name].get_default(call_default_factory=True)


class ApiModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        use_enum_values=False,
        validate_assignment=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict as it appears in YAML: camelCase, without unset optional fields
        and without fields that hold their empty default (``[]``, ``{}``, an empty sub-object).

        ``type(self).model_validate(self.to_wire()) == self`` holds for every model.
        """
        out: dict[str, Any] = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        for name, info in type(self).model_fields.items():
            key = info.alias or name
            if key not in out:
                continue
            value = getattr(self, name)
            compact = _compact(value, out[key])  # a nested model's wire form, made once
            if (
                isinstance(compact, dict | list)
                and not compact
                and not info.is_required()
                and value == _default(type(self), name)
            ):
                del out[key]
            else:
                out[key] = compact
        return out


class OpenModel(ApiModel):
    model_config = ConfigDict(extra="allow")
