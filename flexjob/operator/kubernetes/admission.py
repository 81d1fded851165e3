"""Admission webhooks for ElasticJobs and ScalePlans, backed by ``api.validate``/``api.defaults``.

The validating webhook rejects a spec with one line per bad field (``path: message``); the
mutating webhook fills the defaults of ``api.defaults.apply_defaults``. kopf serves both on its
``WebhookServer`` (paths ``/validate-elasticjob``, ``/validate-scaleplan``, ``/mutate-elasticjob``).
The foreign job kinds (``api.foreign_kinds``: DIJob, ElasticAIJob) are validated the same way,
through their readers, at ``/validate-<kind>`` (their defaults are filled on the ElasticJob the
operator runs for them).
"""

from typing import Any

import kopf

from flexjob.api.defaults import apply_defaults
from flexjob.api.foreign_kinds import FOREIGN_KINDS, ForeignKind, as_read
from flexjob.api.job import ElasticJob
from flexjob.api.names import JOB_RESOURCE, SCALE_PLAN_RESOURCE
from flexjob.api.validate import validate

VALIDATE_JOB = "validate-elasticjob"
VALIDATE_PLAN = "validate-scaleplan"
MUTATE_JOB = "mutate-elasticjob"


def validate_foreign(kind: ForeignKind) -> str:
    """The webhook path (kopf handler id) that validates a foreign job kind."""
    return "-".join(p for p in ("validate", kind.project, kind.kind.lower()) if p)


def _check(body: kopf.Body, old: kopf.Body | None = None) -> None:
    """Reject ``body`` naming every bad field. An update (``old``: the stored object) may keep
    a field it already had, as it was, even where a later version of the rules refuses it
    (Kubernetes' ratcheting validation: e.g. ``optimizeMode: single-job``, which an earlier
    defaulting set on every job); a changed or new field must pass."""
    problems = validate(_without_status(body))
    if problems and old is not None:
        stored = {(p.path, repr(p.value)) for p in validate(_without_status(old))}
        problems = [p for p in problems if (p.path, repr(p.value)) not in stored]
    if problems:
        raise kopf.AdmissionError("; ".join(str(p) for p in problems), code=422)


def _without_status(body: kopf.Body) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key != "status"}


def register_admission(registry: kopf.OperatorRegistry) -> None:
    """Register the validating and mutating handlers on ``registry``."""

    @kopf.on.validate(*JOB_RESOURCE, id=VALIDATE_JOB, registry=registry)
    def validate_job(body: kopf.Body, old: kopf.Body | None = None, **_: Any) -> None:
        _check(body, old)

    @kopf.on.validate(*SCALE_PLAN_RESOURCE, id=VALIDATE_PLAN, registry=registry)
    def validate_plan(body: kopf.Body, **_: Any) -> None:
        _check(body)

    for kind in FOREIGN_KINDS:
        for version in kind.versions if kind.job else ():
            _register_foreign(registry, kind, version)

    @kopf.on.mutate(*JOB_RESOURCE, id=MUTATE_JOB, registry=registry)
    def default_job(body: kopf.Body, patch: kopf.Patch, **_: Any) -> None:
        try:
            job = ElasticJob.model_validate(_without_status(body))
        except ValueError:
            return  # invalid: the validating webhook rejects it with the field messages
        patch["spec"] = apply_defaults(job).to_wire()["spec"]


def _register_foreign(registry: kopf.OperatorRegistry, kind: ForeignKind, version: str) -> None:
    @kopf.on.validate(
        kind.group, version, kind.plural, id=validate_foreign(kind), registry=registry
    )
    def validate_source(body: kopf.Body, **_: Any) -> None:
        problems = validate(as_read(dict(body)))
        if problems:
            raise kopf.AdmissionError("; ".join(str(p) for p in problems), code=422)
