"""Spec builders for api tests: a valid job dict and ways to break one field of it."""

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "specs"
JOB_EXAMPLES = sorted(p for p in EXAMPLES.glob("*.yaml") if p.name != "scaleplan.yaml")

Edit = Callable[[dict[str, Any]], None]


def valid_job() -> dict[str, Any]:
    return {
        "apiVersion": "flexjob.dev/v1alpha1",
        "kind": "ElasticJob",
        "metadata": {"name": "mnist", "namespace": "default"},
        "spec": {
            "replicaSpecs": {
                "worker": {
                    "replicas": 2,
                    "minReplicas": 1,
                    "maxReplicas": 4,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "flexjob/mnist:0.1",
                                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                                }
                            ]
                        }
                    },
                }
            }
        },
    }


def _walk(doc: Any, keys: list[str | int]) -> Any:
    for key in keys:
        doc = doc[key]
    return doc


def _keys(path: str) -> list[str | int]:
    out: list[str | int] = []
    for part in path.split("."):
        name, _, index = part.partition("[")
        out.append(name)
        if index:
            out.append(int(index.rstrip("]")))
    return out


def set_(path: str, value: Any) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        keys = _keys(path)
        _walk(doc, keys[:-1])[keys[-1]] = value

    return edit


def drop(path: str) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        keys = _keys(path)
        del _walk(doc, keys[:-1])[keys[-1]]

    return edit


def edited(*edits: Edit, base: dict[str, Any] | None = None) -> dict[str, Any]:
    doc = copy.deepcopy(base if base is not None else valid_job())
    for edit in edits:
        edit(doc)
    return doc


def rename(path: str, new_key: str) -> Edit:
    """Rename the last key of ``path`` (a typo in a field name)."""

    def edit(doc: dict[str, Any]) -> None:
        keys = _keys(path)
        parent = _walk(doc, keys[:-1])
        parent[new_key] = parent.pop(keys[-1])

    return edit


def two_collector_tasks() -> dict[str, Any]:
    """The example's job with a second collector task, ``collector-b``, of 3 replicas."""
    raw: dict[str, Any] = yaml.safe_load((EXAMPLES / "dijob-v2.yaml").read_text())
    second = {
        "replicas": 3,
        "name": "collector-b",
        "type": "collector",
        "template": {"spec": {"containers": [{"name": "di-container", "image": "b"}]}},
    }
    raw["spec"]["tasks"].insert(2, second)
    return raw
