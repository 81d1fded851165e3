"""The words of a job's Events about its replicas: one created, one failed. No I/O.

For: ``core.operator.reconcile`` (SuccessfulCreate events, failure conditions and restarts).
"""

from flexjob.api import ReplicaType
from flexjob.core.replicas import OOM_KILLED, Replica


def failure_message(replica: Replica) -> str:
    """``replica NAME failed with exit code N``, and the last line of why when known."""
    code = "unknown" if replica.exit_code is None else str(replica.exit_code)
    text = f"replica {replica.name} failed with exit code {code}"
    if replica.reason == OOM_KILLED:
        text += f" ({OOM_KILLED})"
    last = replica.message.strip().rsplit("\n", 1)[-1].strip()
    return f"{text}: {last}" if last else text


#: How many replica names a SuccessfulCreate Event lists before it abbreviates.
_NAMES_LISTED = 8


def created_message(rtype: ReplicaType, names: list[str]) -> str:
    """The one SuccessfulCreate message for the replicas of ``rtype`` one pass created."""
    if len(names) == 1:
        return f"created replica {names[0]}"
    listed = names if len(names) <= _NAMES_LISTED else [*names[:3], "...", names[-1]]
    return f"created {len(names)} {rtype.value} replicas: {', '.join(listed)}"
