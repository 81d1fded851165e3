"""The flags that tune a job's master, owned once for ``flexjob master`` and ``flexjob run``.

``flexjob run`` gives each its own default; ``flexjob master`` defaults each to None (the
job's value, or ``MasterConfig``'s, shown in the help). Validation is ``MasterConfig``'s and
``core.training.stragglers``'.
"""

from typing import Any

import typer

#: parameter name → (flag, help).
_FLAGS: dict[str, tuple[str, str]] = {
    "heartbeat_timeout": ("--heartbeat-timeout", "Seconds of silence before a node is dead."),
    "last_call_timeout": ("--last-call-timeout", "Seconds a round waits for more than min nodes."),
    "stragglers": (
        "--stragglers",
        "Nodes whose own step time is over --straggler-ratio x the others' median for "
        "--straggler-window seconds: report them, also exclude them from the next world, or off.",
    ),
    "straggler_ratio": (
        "--straggler-ratio",
        "A straggler's step time over the others' median; > 1.",
    ),
    "straggler_window": ("--straggler-window", "Seconds a node must be that slow; > 0."),
}


def master_flag(name: str, default: Any, shown: object = None) -> Any:
    """The typer option of the master flag ``name`` (a parameter name: ``straggler_ratio``),
    defaulting to ``default``; ``shown``: the default to print when ``default`` is None."""
    flag, help_text = _FLAGS[name]
    return typer.Option(
        default, flag, help=help_text, show_default=True if shown is None else str(shown)
    )
