"""What is wrong with a spec: ``Problem`` (field path, bad value, message) and ``SpecError``.

Every check in ``api`` reports through these, so a user sees every problem at once, each naming
the field. Not for runtime errors of jobs (those are job conditions and events).
"""

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from flexjob.api.errors import InvalidSpecError

#: ``Problem.value`` when the field is absent (distinct from a field set to null).
MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()


@dataclass(frozen=True, slots=True)
class Problem:
    """One bad field. ``path`` is dotted camelCase with list indices, e.g.
    ``spec.replicaSpecs.worker.template.spec.containers[0].image``; empty for a whole-document
    problem (such as a YAML syntax error)."""

    path: str
    value: Any
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class SpecError(InvalidSpecError):
    """A spec was rejected; ``problems`` lists every reason."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems: list[Problem] = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems) or "invalid spec")


def join_path(base: str, key: str | int) -> str:
    """``join_path("spec", "tasks")`` → ``spec.tasks``; ``join_path("spec.tasks", 0)`` →
    ``spec.tasks[0]``."""
    if isinstance(key, int):
        return f"{base}[{key}]"
    return f"{base}.{key}" if base else key


def one_of(value: Any, allowed: Iterable[str]) -> str:
    """``'Sometimes' is not one of Running, All, None`` plus a "did you mean" when one is close."""
    choices = list(allowed)
    message = f"{value!r} is not one of {', '.join(choices)}"
    return message + did_you_mean(value, choices)


def did_you_mean(value: Any, choices: Iterable[str]) -> str:
    """``"; did you mean 'replicas'?"`` when a choice is close to ``value``, else ``""``."""
    if not isinstance(value, str):
        return ""
    lowered = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(value.lower(), list(lowered), n=1, cutoff=0.6)
    return f"; did you mean {lowered[close[0]]!r}?" if close else ""


def unknown_field(path: str, key: str, value: Any, allowed: Iterable[str]) -> Problem:
    """An unknown field at ``path``: names the close match, if any, and the allowed fields."""
    choices = sorted(allowed)
    hint = did_you_mean(key, choices)
    listing = f" (allowed: {', '.join(choices)})" if choices and not hint else ""
    return Problem(join_path(path, key), value, f"unknown field {key!r}{hint}{listing}")
