"""Agents' ``Attach`` streams: which stream of a node is the current one, and whether the
master is stopping.

An agent keeps one stream open while it lives; the master takes the end of a node's current
stream for the node's death (``MasterService.detach``), unless the master itself is stopping
(its server ends every stream then) or a newer stream of the same node replaced it (a restarted
agent). Not for heartbeats (``master.health``: nodes without a stream expire there).
"""

import threading


class Attachments:
    def __init__(self) -> None:
        self._current: dict[str, int] = {}
        self._next = 0
        #: Set once the master stops: ending streams then mean nothing.
        self.closing = threading.Event()

    def attach(self, node_id: str) -> int:
        """A stream of ``node_id`` opened; its token."""
        self._next += 1
        self._current[node_id] = self._next
        return self._next

    def forget(self, node_id: str) -> None:
        """``node_id`` left on purpose: the end of its stream means nothing."""
        self._current.pop(node_id, None)

    def detach(self, node_id: str, token: int) -> bool:
        """The stream of ``token`` ended; True when that means the node is gone."""
        if self._current.get(node_id) != token:
            return False
        del self._current[node_id]
        return not self.closing.is_set()
