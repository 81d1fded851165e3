"""The agent's membership with its job master (``core.training.fencing``): its heartbeats, one
at a time, carrying the incarnation the first one got; whether the latest reply fences this
membership; joining again as a new member once its workers are stopped. Not for deciding
what fencing refuses (the master does) or for stopping workers (``agent.agent`` does)."""

import threading

from flexjob.api.errors import FlexjobError
from flexjob.rpc.client import MasterClient
from flexjob.rpc.messages import HeartbeatReply


class Membership:
    """The heartbeats of ``client``'s node; ``reply`` is the latest answer (None: none yet)."""

    def __init__(self, client: MasterClient) -> None:
        self._client = client
        self._lock = threading.Lock()  # a heartbeat's incarnation is the one the reply sets
        self.reply: HeartbeatReply | None = None

    def beat(self) -> HeartbeatReply:
        """One heartbeat; the first joins this node as a member (``UnavailableError`` when the
        master is unreachable)."""
        with self._lock:
            self.reply = self._client.heartbeat()
            return self.reply

    def beat_now(self) -> HeartbeatReply | None:
        """``beat``, or None when it failed (an unreachable master fences nothing)."""
        try:
            return self.beat()
        except FlexjobError:
            return None

    def fenced(self, reply: HeartbeatReply | None) -> bool:
        """Whether ``reply`` fences the current membership (a reply to an older one says
        nothing)."""
        return reply is not None and reply.fenced and reply.incarnation == self.incarnation

    @property
    def incarnation(self) -> int:
        return self._client.incarnation

    def rejoin(self) -> HeartbeatReply:
        """Drop the fenced incarnation and join again as a new member (its workers stopped)."""
        with self._lock:
            self._client.leave_membership()
            self.reply = self._client.heartbeat()
            return self.reply
