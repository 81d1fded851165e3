"""``MemberBook``: the master's record of its nodes' memberships (``core.training.fencing``),
saved with its state (``master.snapshot``) so that a restarted master still refuses a node it
fenced before and its live nodes go on under their incarnations. Not for deciding what fencing
refuses (``core.training.fencing``) or when a node is declared dead (``master.service``)."""

from collections.abc import Mapping

from flexjob.core.training.fencing import Memberships


class MemberBook:
    """The current ``Memberships``; ``version`` grows with every change (what to re-save)."""

    def __init__(self) -> None:
        self.state = Memberships()
        self.version = 0

    def set(self, state: Memberships) -> bool:
        """Take ``state`` (an answer of ``core.training.fencing``); whether it changed."""
        if state is self.state or state == self.state:
            return False
        self.state = state
        self.version += 1
        return True

    def to_dict(self) -> dict[str, object]:
        return self.state.to_dict()

    def restore(self, data: Mapping[str, object]) -> None:
        """The memberships a snapshot saved (``ValueError`` naming the field when malformed)."""
        self.state = Memberships.from_dict(data)
        self.version += 1
