"""``flexjob get -o ...`` as kubectl prints: ``table`` (default), ``wide``, ``name``, ``yaml``,
``json`` (a list of jobs is one ``List`` object, as kubectl's) and ``jsonpath=TEMPLATE`` (the
part of kubectl's JSONPath that reads fields: ``{.status.phase}``, ``{.items[*].metadata.name}``,
``{.spec.replicaSpecs.worker.replicas}``, ``{range .items[*]}...{end}``, ``{"\\n"}``).

Pure: wire dicts in, text out; the command fetches and prints.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flexjob.api.load import dump_yaml
from flexjob.api.names import GROUP, KIND_JOB

#: The ``-o`` formats (``jsonpath=`` takes a template).
OUTPUTS = ("table", "wide", "name", "yaml", "json", "jsonpath=TEMPLATE")


@dataclass(frozen=True, slots=True)
class Output:
    kind: str  # one of OUTPUTS' names
    template: str = ""


def parse_output(text: str) -> Output:
    """``-o`` → ``Output``; ``ValueError`` naming the allowed ones."""
    kind, sep, template = text.partition("=")
    if kind == "jsonpath" and sep and template:
        return Output("jsonpath", template.strip("'"))
    if not sep and kind in ("table", "wide", "name", "yaml", "json"):
        return Output(kind)
    raise ValueError(f"--output: {text!r} is not one of {', '.join(OUTPUTS)}")


def list_body(items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """kubectl's ``List`` of several objects."""
    return {"apiVersion": "v1", "kind": "List", "items": list(items), "metadata": {}}


def object_name(wire: dict[str, Any]) -> str:
    """``elasticjob.flexjob.dev/NAME``, as ``kubectl get -o name``."""
    return f"{KIND_JOB.lower()}.{GROUP}/{wire['metadata']['name']}"


def render(output: Output, wires: Sequence[dict[str, Any]], one: bool) -> str:
    """The text of ``wires`` (one object when ``one``, else a list) in ``output`` (not the
    tables: ``job_views`` draws those)."""
    body = wires[0] if one else list_body(wires)
    if output.kind == "json":
        return json.dumps(body, indent=2) + "\n"
    if output.kind == "yaml":
        return dump_yaml(body)
    if output.kind == "name":
        return "".join(object_name(w) + "\n" for w in wires)
    if output.kind == "jsonpath":
        return jsonpath(output.template, body)
    raise ValueError(f"no text rendering for -o {output.kind}")


_TOKEN = re.compile(r"\{([^{}]*)\}")
_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\*|-?\d+)\]")


def _select(values: list[Any], path: str) -> list[Any]:
    path = path.strip()
    if path in ("", "@", "."):
        return values
    if not path.startswith(".") and not path.startswith("["):
        raise ValueError(f"jsonpath: {path!r} is not a path such as .status.phase")
    for match in _SEGMENT.finditer(path.lstrip(".")):
        key, index = match.groups()
        out: list[Any] = []
        for value in values:
            if key is not None and isinstance(value, dict) and key in value:
                out.append(value[key])
            elif index == "*" and isinstance(value, list):
                out += value
            elif index is not None and index != "*" and isinstance(value, list):
                i = int(index)
                if -len(value) <= i < len(value):
                    out.append(value[i])
        values = out
    return values


def _text(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def jsonpath(template: str, obj: Any) -> str:
    """kubectl's ``-o jsonpath=TEMPLATE`` on ``obj`` (fields, ``[*]``/``[N]``, string
    literals, ``range ... end``)."""
    out, _ = _run(_tokens(template), 0, [obj])
    return out


def _tokens(template: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    at = 0
    for match in _TOKEN.finditer(template):
        if match.start() > at:
            tokens.append(("text", template[at : match.start()]))
        tokens.append(("expr", match.group(1).strip()))
        at = match.end()
    if at < len(template):
        tokens.append(("text", template[at:]))
    return tokens


def _run(tokens: list[tuple[str, str]], i: int, scope: list[Any]) -> tuple[str, int]:
    """Render ``tokens`` from ``i`` in ``scope`` until an ``end`` (or the last); the text and
    where it stopped."""
    out: list[str] = []
    while i < len(tokens):
        kind, value = tokens[i]
        i += 1
        if kind == "text":
            out.append(value)
        elif value == "end":
            return "".join(out), i
        elif value.startswith("range "):
            items = _select(scope, value.removeprefix("range "))
            body_end = i
            for item in items:
                text, body_end = _run(tokens, i, [item])
                out.append(text)
            if not items:  # skip the body
                _, body_end = _run(tokens, i, [])
            i = body_end
        elif value.startswith('"') and value.endswith('"') and len(value) >= 2:
            out.append(json.loads(value))
        else:
            out.append(" ".join(_text(v) for v in _select(scope, value)))
    return "".join(out), i
