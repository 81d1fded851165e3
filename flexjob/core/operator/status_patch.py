"""Partial updates of a job's status: which writer owns which field, the patch a writer sends,
and how a platform applies one.

Several writers change the status of the same job at the same time: the operator (phase,
conditions, counts, restarts), the server (a user's scale request, profilings), the
Allocator (node placement) and the job master (the profilings its trainers measured). None
of them may replace the whole status, or the last writer would silently undo the others.
Instead each sends a *status patch*: an RFC 7386 JSON merge patch on the camelCase wire form
of ``ElasticJobStatus``, holding only the fields it owns and changed:

* a field that is absent from the patch is left as it is;
* an object field (``replicas``, ``specReplicas``, ``allocation``, ``replicaStatuses``,
  ``profilings``, ``replicaResources``, ``migratedReplicas``) is merged key by key,
  recursively; a key set to ``null`` is removed;
* any other value (a string, a number, a list such as ``conditions``) replaces the stored one;
  a top-level field set to ``null`` goes back to its default.

(As with any merge patch, a JSON ``null`` cannot be stored inside ``profilings``.)

Not here: applying a patch to stored state atomically; that is the platform's job
(``Platform.patch_job_status``). No I/O.
"""

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from flexjob.api import ElasticJobStatus
from flexjob.api.errors import InvalidSpecError
from flexjob.api.roles import MASTER_TYPE

#: A JSON merge patch on the wire form of ``ElasticJobStatus`` (camelCase keys).
StatusPatch = Mapping[str, Any]

_ALIASES: dict[str, str] = {
    name: info.alias or name for name, info in ElasticJobStatus.model_fields.items()
}
#: The wire names of every status field, the only keys a status patch may hold.
STATUS_FIELDS: frozenset[str] = frozenset(_ALIASES.values())


class StatusOwner(StrEnum):
    """The writers of a job's status."""

    OPERATOR = "operator"
    SERVER = "server"
    ALLOCATOR = "allocator"
    MASTER = MASTER_TYPE.value


#: The fields each writer may change. ``replicas`` is shared: the server sets it on a user's
#: scale request, the Allocator for preemptible jobs, the operator when it folds a ScalePlan;
#: each writes only the replica types it changes, so concurrent writes to different types all
#: survive (the same type: the last writer wins, as with any two scale requests).
#: ``migratedReplicas`` is shared the same way, by replica: the operator's relaunches, the
#: server's DI replicas created with resources (``core.operator.replica_resources``).
OWNED_FIELDS: Mapping[StatusOwner, frozenset[str]] = {
    StatusOwner.OPERATOR: frozenset(
        {
            "phase",
            "conditions",
            "replicaStatuses",
            "replicas",
            "specReplicas",
            "startTime",
            "completionTime",
            "restartCount",
            "restartedReplicas",
            "lastScalePlan",
            "replicaResources",
            "migratedReplicas",
            "message",
        }
    ),
    StatusOwner.SERVER: frozenset({"replicas", "profilings", "migratedReplicas"}),
    StatusOwner.ALLOCATOR: frozenset({"allocation", "replicas"}),
    StatusOwner.MASTER: frozenset({"profilings"}),
}


class InvalidStatusPatchError(InvalidSpecError):
    """A status patch names an unknown field or would leave the status invalid."""


def _wire(status: ElasticJobStatus | None) -> dict[str, Any]:
    dumped: dict[str, Any] = (status or ElasticJobStatus()).model_dump(mode="json", by_alias=True)
    return dumped


def _diff(before: Any, after: Any) -> Any:
    """The merge patch turning ``before`` into ``after`` (both different, JSON values)."""
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return after
    patch: dict[str, Any] = {key: None for key in before if key not in after}
    for key, value in after.items():
        if key not in before:
            patch[key] = value
        elif before[key] != value:
            patch[key] = _diff(before[key], value)
    return patch


def status_patch(
    before: ElasticJobStatus | None, after: ElasticJobStatus, fields: Iterable[str]
) -> dict[str, Any]:
    """The merge patch that turns ``before`` into ``after`` on ``fields`` (wire names) only;
    empty when none of them changed. Object fields carry only the keys that changed."""
    old, new = _wire(before), _wire(after)
    unknown = set(fields) - STATUS_FIELDS
    if unknown:
        raise InvalidStatusPatchError(_unknown_message(unknown))
    return {key: _diff(old[key], new[key]) for key in fields if old[key] != new[key]}


def owner_patch(
    before: ElasticJobStatus | None, after: ElasticJobStatus, owner: StatusOwner
) -> dict[str, Any]:
    """``status_patch`` restricted to the fields ``owner`` owns."""
    return status_patch(before, after, sorted(OWNED_FIELDS[owner]))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: objects merge recursively, ``None`` removes a key, anything
    else replaces. Neither argument is changed."""
    if not isinstance(patch, Mapping):
        return patch
    merged = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def compose_patches(first: StatusPatch, then: StatusPatch) -> dict[str, Any]:
    """One merge patch that does what applying ``first`` and then ``then`` does (a ``None`` of
    ``then`` stays: it removes what ``first`` or the target had)."""
    composed = dict(first)
    for key, value in then.items():
        before = composed.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            composed[key] = compose_patches(before, value)
        else:
            composed[key] = value
    return composed


def _unknown_message(unknown: Iterable[str]) -> str:
    names = ", ".join(sorted(unknown))
    return f"status patch: unknown field(s) {names}; allowed: {', '.join(sorted(STATUS_FIELDS))}"


def normalize_status_patch(patch: StatusPatch) -> dict[str, Any]:
    """The patch as plain JSON with wire (camelCase) keys; snake_case field names, enums and
    API models are accepted and converted. ``InvalidStatusPatchError`` names an unknown field,
    or the field whose new value is not valid on its own."""
    out: dict[str, Any] = {}
    unknown = []
    for key, value in patch.items():
        wire = _ALIASES.get(key, key)
        if wire not in STATUS_FIELDS:
            unknown.append(key)
            continue
        out[wire] = to_jsonable_python(value, by_alias=True)
    if unknown:
        raise InvalidStatusPatchError(_unknown_message(unknown))
    apply_status_patch(ElasticJobStatus(), out)  # types checked against the defaults
    return out


def apply_status_patch(status: ElasticJobStatus | None, patch: StatusPatch) -> ElasticJobStatus:
    """``status`` with ``patch`` (wire keys, plain JSON) merged in, validated."""
    merged = merge_patch(_wire(status), patch)
    try:
        return ElasticJobStatus.model_validate(merged)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise InvalidStatusPatchError(f"status patch: {problems}") from None
