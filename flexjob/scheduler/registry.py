"""Finding a policy by name: built-ins, the ``flexjob.policies`` entry points, or ``module:Class``.

For: ``flexjob simulate --policy NAME``, the Allocator and benchmarks. Works when flexjob is not
installed (entry points are then simply absent and the built-in registry answers). Not for
defining policies (``flexjob.core.allocator``).
"""

import importlib
import inspect
import logging
from importlib.metadata import entry_points
from typing import Any

from flexjob.api.errors import AllocatorError, InvalidSpecError
from flexjob.core.allocator import BUILTIN_POLICIES, Policy

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "flexjob.policies"


class UnknownPolicyError(AllocatorError, InvalidSpecError, LookupError):
    """No policy of that name; the message lists the names that exist."""


def available_policies() -> list[str]:
    names = set(BUILTIN_POLICIES)
    names.update(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))
    return sorted(names)


def _policy_class(name: str) -> Any:
    if name in BUILTIN_POLICIES:
        return BUILTIN_POLICIES[name]
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            return ep.load()
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise UnknownPolicyError(f"policy {name!r} cannot be imported: {exc}") from exc
    raise UnknownPolicyError(
        f"unknown policy {name!r}; available: {', '.join(available_policies())} (or module:Class)"
    )


def load_policy(name: str, **options: Any) -> Policy:
    """An instance of the policy called ``name``, built with ``options``."""
    policy = _policy_class(name)(**options)
    if not isinstance(policy, Policy):
        raise UnknownPolicyError(f"{name!r} is not a policy (needs name, allocate, optimize)")
    return policy


def load_policy_for(name: str, **settings: Any) -> Policy:
    """``load_policy`` with those of ``settings`` that the policy's constructor takes, e.g. a
    simulated cluster's ``restart_delay`` for the restart-aware policies; a policy that takes
    none of them is built with its defaults."""
    try:
        params = dict(inspect.signature(_policy_class(name)).parameters)
    except (TypeError, ValueError):  # a constructor without a signature: give it nothing
        params = {}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return load_policy(name, **{k: v for k, v in settings.items() if takes_any or k in params})
