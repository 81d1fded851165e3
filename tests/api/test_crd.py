"""The generated CRDs: structural as Kubernetes requires, and every example job (converted to
an ElasticJob) is accepted by the ElasticJob schema."""

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flexjob.api.crd import crds, job_crd, scale_plan_crd
from flexjob.api.crd_check import crd_problems, structural_problems
from flexjob.api.defaults import apply_defaults
from flexjob.api.load import load_job, load_scale_plan
from tests.api.specs import EXAMPLES, JOB_EXAMPLES

PRESERVE = "x-kubernetes-preserve-unknown-fields"


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _strict(node: Any) -> Any:
    """The schema as the API server applies it: unknown fields of typed objects are errors
    (the server would prune them), int-or-string accepts only integers and strings."""
    if not isinstance(node, dict):
        return node
    out = {k: _strict(v) if k in ("items", "additionalProperties") else v for k, v in node.items()}
    if "properties" in node:
        out["properties"] = {k: _strict(v) for k, v in node["properties"].items()}
        if not node.get(PRESERVE):
            out["additionalProperties"] = False
    if node.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    return out


def _accepts(crd: dict[str, Any], wire: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(_strict(_schema(crd)))
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(wire)]


@pytest.mark.parametrize("crd", crds(), ids=lambda c: c["metadata"]["name"])
def test_crd_schema_is_structural(crd: dict[str, Any]) -> None:
    assert crd_problems(crd) == []


@pytest.mark.parametrize("path", JOB_EXAMPLES, ids=lambda p: p.name)
def test_example_is_accepted_by_the_job_crd(path: Path) -> None:
    job = load_job(path)
    assert _accepts(job_crd(), job.to_wire()) == []
    assert _accepts(job_crd(), apply_defaults(job).to_wire()) == []


def test_scale_plan_example_is_accepted_by_its_crd() -> None:
    plan = load_scale_plan(EXAMPLES / "scaleplan.yaml")
    assert _accepts(scale_plan_crd(), plan.to_wire()) == []


def test_job_crd_rejects_an_unknown_replica_type() -> None:
    wire = load_job(EXAMPLES / "elasticjob.yaml").to_wire()
    wire["spec"]["replicaSpecs"]["workr"] = wire["spec"]["replicaSpecs"]["worker"]
    assert _accepts(job_crd(), wire)


def test_job_crd_rejects_a_bad_enum_value() -> None:
    wire = load_job(EXAMPLES / "elasticjob.yaml").to_wire()
    wire["spec"]["cleanPodPolicy"] = "Sometimes"
    assert any("cleanPodPolicy" in e for e in _accepts(job_crd(), wire))


def test_job_crd_has_short_name_and_printer_columns() -> None:
    crd = job_crd()
    assert crd["spec"]["names"]["shortNames"] == ["ej"]
    columns = [c["name"] for c in crd["spec"]["versions"][0]["additionalPrinterColumns"]]
    assert columns == ["Phase", "Workers", "Age"]
    assert scale_plan_crd()["spec"]["names"]["shortNames"] == ["sp"]


def test_pod_template_keeps_unknown_fields() -> None:
    spec = _schema(job_crd())["properties"]["spec"]
    template = spec["properties"]["replicaSpecs"]["properties"]["worker"]["properties"]["template"]
    assert template == {"type": "object", PRESERVE: True}


def _broken(edit: str) -> dict[str, Any]:
    schema = copy.deepcopy(_schema(job_crd()))
    spec = schema["properties"]["spec"]["properties"]
    if edit == "ref":
        spec["backoffLimit"] = {"$ref": "#/definitions/x"}
    elif edit == "untyped":
        spec["backoffLimit"] = {"minimum": 0}
    elif edit == "anyof-type":
        spec["backoffLimit"] = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    elif edit == "both-props":
        spec["dataset"]["additionalProperties"] = {"type": "string"}
    elif edit == "metadata":
        schema["properties"]["metadata"] = {"type": "object", "properties": {"labels": {}}}
    return schema


@pytest.mark.parametrize("edit", ["ref", "untyped", "anyof-type", "both-props", "metadata"])
def test_checker_finds_non_structural_schemas(edit: str) -> None:
    assert structural_problems(_broken(edit))
