"""The one rule for the names a user or a client gives (jobs, namespaces, replicas) and for the
parts of a path built from a name.

Job and namespace names are DNS-1123 labels everywhere (a spec's ``metadata``, every CLI
argument and ``-n`` option, the server's job ids), so a name is always one harmless path
part. Names that are not Kubernetes objects (``flexjob run --job-name``, a replica's short
name, a log's) must at least be one path part: no separator, not ``.`` or ``..``, no NUL.
Where such a path is joined to its home, ``platform.local.paths`` checks that it stays there.
Pure checks, no I/O.
"""

import re

from flexjob.api.errors import InvalidSpecError

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_MAX_LABEL = 63
_MAX_PATH_PART = 255

LABEL_RULE = (
    "a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter "
    f"or digit, at most {_MAX_LABEL} characters)"
)


def is_dns1123_label(name: str) -> bool:
    return len(name) <= _MAX_LABEL and _DNS1123_LABEL.match(name) is not None


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a job or a namespace, or None."""
    if not name:
        return "a name is required"
    if not is_dns1123_label(name):
        return f"{name!r} is not {LABEL_RULE}"
    return None


def check_name(field: str, name: str) -> str:
    """``name`` when it is a valid job or namespace name; else ``InvalidSpecError`` naming
    ``field``."""
    problem = name_problem(name)
    if problem:
        raise InvalidSpecError(f"{field}: {problem}")
    return name


def path_part_problem(part: str) -> str | None:
    """Why ``part`` cannot be one component of a path (it would leave its folder or name
    none), or None."""
    if part in ("", ".", ".."):
        return f"{part!r} does not name a file or folder"
    if any(c in part for c in "/\\\0"):
        return f"{part!r} holds a path separator or NUL"
    if len(part) > _MAX_PATH_PART:
        return f"{len(part)} characters, at most {_MAX_PATH_PART}"
    return None


def check_path_part(field: str, part: str) -> str:
    """``part`` when it is one path component; else ``InvalidSpecError`` naming ``field``."""
    problem = path_part_problem(part)
    if problem:
        raise InvalidSpecError(f"{field}: {problem}")
    return part
