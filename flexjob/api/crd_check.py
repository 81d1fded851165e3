"""Checks that a CRD's openAPIV3Schema is structural, by the rules Kubernetes applies
(apiextensions.k8s.io/v1): every node typed (or int-or-string / preserve-unknown-fields), no
``$ref`` or other keywords v1 forbids, nothing but value checks inside ``anyOf``/``allOf``/
``oneOf``/``not``, ``properties`` and ``additionalProperties`` not both set, and ``metadata``
restricted to name/generateName. Used by tests and by ``flexjob manifests`` callers; no I/O.
"""

from typing import Any

#: Keywords a v1 CRD schema may use (JSONSchemaProps minus those v1 forbids).
ALLOWED = frozenset(
    {
        "description", "type", "format", "title", "default", "maximum", "exclusiveMaximum",
        "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems",
        "minItems", "uniqueItems", "multipleOf", "enum", "maxProperties", "minProperties",
        "required", "items", "allOf", "oneOf", "anyOf", "not", "properties",
        "additionalProperties", "nullable", "example", "externalDocs",
        "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
        "x-kubernetes-embedded-resource", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type", "x-kubernetes-validations",
    }
)  # fmt: skip
TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean"})
_JUNCTORS = ("allOf", "anyOf", "oneOf", "not")
_NOT_IN_JUNCTOR = frozenset({"description", "type", "default", "additionalProperties", "nullable"})


def _typed(node: dict[str, Any]) -> bool:
    return (
        node.get("type") in TYPES
        or node.get("x-kubernetes-int-or-string") is True
        or node.get("x-kubernetes-preserve-unknown-fields") is True
    )


def _junctor_problems(path: str, node: dict[str, Any]) -> list[str]:
    problems = []
    for junctor in _JUNCTORS:
        if junctor not in node:
            continue
        branches = node[junctor] if isinstance(node[junctor], list) else [node[junctor]]
        for branch in branches:
            bad = sorted(set(branch) & _NOT_IN_JUNCTOR)
            int_or_string = node.get("x-kubernetes-int-or-string") and set(branch) == {"type"}
            if bad and not int_or_string:
                problems.append(f"{path}.{junctor}: sets {', '.join(bad)} inside a junctor")
            for key in branch.get("properties", {}):
                if key not in node.get("properties", {}):
                    problems.append(f"{path}.{junctor}: field {key!r} not specified outside")
    return problems


def _walk(path: str, node: Any, problems: list[str]) -> None:
    if not isinstance(node, dict):
        problems.append(f"{path}: a schema node must be an object")
        return
    unknown = sorted(set(node) - ALLOWED)
    if unknown:
        problems.append(f"{path}: keywords not allowed in a v1 CRD: {', '.join(unknown)}")
    if not _typed(node):
        problems.append(f"{path}: no type (and not int-or-string or preserve-unknown-fields)")
    if "properties" in node and isinstance(node.get("additionalProperties"), dict | bool):
        problems.append(f"{path}: properties and additionalProperties are mutually exclusive")
    problems.extend(_junctor_problems(path, node))
    for key, child in node.get("properties", {}).items():
        _walk(f"{path}.properties.{key}", child, problems)
    if isinstance(node.get("items"), dict):
        _walk(f"{path}.items", node["items"], problems)
    if isinstance(node.get("additionalProperties"), dict):
        _walk(f"{path}.additionalProperties", node["additionalProperties"], problems)


def structural_problems(schema: dict[str, Any]) -> list[str]:
    """Why ``schema`` (an openAPIV3Schema) is not structural; ``[]`` when it is."""
    problems: list[str] = []
    _walk("openAPIV3Schema", schema, problems)
    if schema.get("type") != "object":
        problems.append("openAPIV3Schema: the root must be of type object")
    metadata = schema.get("properties", {}).get("metadata", {})
    if set(metadata.get("properties", {})) - {"name", "generateName"}:
        problems.append("openAPIV3Schema.properties.metadata: only name/generateName may be set")
    return problems


def crd_problems(crd: dict[str, Any]) -> list[str]:
    """Structural problems of every version of a CRD, plus missing status subresources."""
    problems = []
    for version in crd["spec"]["versions"]:
        problems += structural_problems(version["schema"]["openAPIV3Schema"])
        if "status" not in version.get("subresources", {}):
            problems.append(f"{version['name']}: no status subresource")
    return problems
