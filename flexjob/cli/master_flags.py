"""The flags that tune a job's master, owned once for ``flexjob master`` and ``flexjob run``.

Each flag names the setting it sets (``MasterConfig.with_overrides``' key) and takes its
default from a ``MasterConfig``: ``flexjob run``'s from the settings of the master it starts
(``runner.config.RUN_MASTER``); ``flexjob master``'s is None (the job's value, or
``MasterConfig``'s, shown in the help). Validation is the settings groups'.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import typer

from flexjob.core.training.master_config import GROUP_SEP, MasterConfig


@dataclass(frozen=True, slots=True)
class MasterFlag:
    flags: tuple[str, ...]
    #: The setting it sets: ``GROUP__FIELD`` (``node_health__heartbeat_timeout``).
    setting: str
    help: str


#: parameter name → its flag.
FLAGS: dict[str, MasterFlag] = {
    "heartbeat_timeout": MasterFlag(
        ("--heartbeat-timeout",),
        "node_health__heartbeat_timeout",
        "Seconds of silence before a node is dead.",
    ),
    "replica_pending_timeout": MasterFlag(
        ("--replica-pending-timeout",),
        "node_health__replica_pending_timeout",
        "Seconds a replica may stay Pending before the node watcher reports it.",
    ),
    "last_call_timeout": MasterFlag(
        ("--last-call-timeout",),
        "rendezvous__last_call_timeout",
        "Seconds a round waits for more than min nodes.",
    ),
    "slow_shard_timeout": MasterFlag(
        ("--straggler-timeout", "--slow-shard-timeout"),
        "shards__slow_shard_timeout",
        "Seconds before a shard in progress is handed out again (a slow shard).",
    ),
    "stragglers": MasterFlag(
        ("--stragglers",),
        "slow_nodes__policy",
        "Nodes whose own step time is over --straggler-ratio x the others' median for "
        "--straggler-window seconds: report them, also exclude them from the next world, or off.",
    ),
    "straggler_ratio": MasterFlag(
        ("--straggler-ratio",),
        "slow_nodes__ratio",
        "A straggler's step time over the others' median; > 1.",
    ),
    "straggler_window": MasterFlag(
        ("--straggler-window",),
        "slow_nodes__window_s",
        "Seconds a node must be that slow; > 0.",
    ),
}


def setting(config: MasterConfig, key: str) -> Any:
    """The value of the setting ``key`` (``GROUP__FIELD`` or a top-level field) in ``config``."""
    group, sep, name = key.partition(GROUP_SEP)
    return getattr(getattr(config, group), name) if sep else getattr(config, key)


def default_of(name: str, config: MasterConfig) -> Any:
    """The flag ``name``'s value in ``config`` (what it defaults to there)."""
    return setting(config, FLAGS[name].setting)


def master_flag(name: str, defaults: MasterConfig | None = None) -> Any:
    """The typer option of the master flag ``name`` (a parameter name: ``straggler_ratio``):
    defaulting to its value in ``defaults``, or to None (shown: ``MasterConfig``'s)."""
    flag = FLAGS[name]
    shown = default_of(name, MasterConfig())
    default = None if defaults is None else default_of(name, defaults)
    return typer.Option(
        default,
        *flag.flags,
        help=flag.help,
        show_default=True if defaults is not None else _shown(shown),
    )


def _shown(value: Any) -> str:
    if value is None:
        return "never"
    return f"{value:g}" if isinstance(value, float) else str(value)


def overrides(values: Mapping[str, Any]) -> dict[str, Any]:
    """``with_overrides`` keys of the flags' values given by parameter name."""
    return {FLAGS[name].setting: value for name, value in values.items()}
