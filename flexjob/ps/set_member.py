"""``SetMember``: one PS replica's part in its job's PS-set changes (issue 15).

Implements ``rpc.ps_control.PsControlBackend`` for the master's driver: ``pause`` closes the
replica's ``PsGate`` (the version barrier), ``checkpoint`` writes the partition now, ``load``
drops it and loads this replica's share of a whole earlier set's checkpoints and answers the
totals of what it now holds (its first checkpoint is written in the background: until the
new set's files are all written, a PS killed meanwhile restores its share of the old set's
files, the same state; ``ps.checkpoint_io.latest_set``), ``resume`` opens the gate to clients
of the new set. ``member`` is what the
replica publishes about itself; ``leave`` (on SIGTERM) refuses new calls, writes a last
checkpoint and says so. Not for the protocol's order (``core.ps.set_change``).
"""

import logging
from pathlib import Path

from flexjob.api.errors import InvalidSpecError
from flexjob.core.ps.set_change import MemberState, PsMember, RowTotals, snapshot_totals
from flexjob.ps.checkpoint_io import read_set
from flexjob.ps.checkpointer import PsCheckpointer
from flexjob.ps.service import PsService
from flexjob.rpc.ps_control import Checkpointed
from flexjob.rpc.ps_gate import PsGate

log = logging.getLogger(__name__)

EMPTY = RowTotals(0, 0, 0.0)


class SetMember:
    def __init__(
        self,
        service: PsService,
        gate: PsGate,
        checkpointer: PsCheckpointer | None,
        directory: Path | None,
        serving: bool,
    ) -> None:
        self._service = service
        self._gate = gate
        self._checkpointer = checkpointer
        self._directory = directory
        self.state = MemberState.SERVING if serving else MemberState.STANDBY
        self._left_totals: RowTotals | None = None

    def member(self, address: str) -> PsMember:
        return PsMember(address, self.state, self._left_totals, self._service.num_ps)

    # ---- PsControlBackend ----
    def pause(self) -> int:
        waited = self._gate.close("this PS is paused for a PS-set change")
        log.info("event=ps_paused index=%d in_flight_waited=%d", self._service.index, waited)
        return waited

    def checkpoint(self) -> Checkpointed:
        done = self._needs_checkpointer().checkpoint_now()
        if done is None:  # no worker declared the model yet: nothing to carry over
            return Checkpointed("", self._service.version, EMPTY)
        return done

    def load(self, index: int, num_ps: int, from_num_ps: int, set_version: int) -> RowTotals:
        checkpointer = self._needs_checkpointer()
        if not 0 <= index < num_ps:
            raise InvalidSpecError(f"index: {index} must be in [0, num_ps {num_ps})")
        if self._gate.is_open:
            raise InvalidSpecError("load: pause this PS first (its gate is open)")
        assert self._directory is not None
        snaps = read_set(self._directory, from_num_ps) if from_num_ps else []
        rows = checkpointer.exclusive(lambda: self._service.reload(index, num_ps, snaps))
        totals = snapshot_totals(self._service.snapshot()[0]) if snaps else EMPTY
        checkpointer.request()  # the new layout's first checkpoint, in the background
        self.state = MemberState.SERVING
        log.info(
            "event=ps_set_loaded index=%d num_ps=%d from_num_ps=%d set_version=%d rows=%d",
            index,
            num_ps,
            from_num_ps,
            set_version,
            rows,
        )
        return totals

    def resume(self, set_version: int) -> None:
        self._gate.open(set_version)
        self.state = MemberState.SERVING
        log.info("event=ps_resumed index=%d set_version=%d", self._service.index, set_version)

    # ---- leaving ----
    def leave(self) -> None:
        """Refuse new data calls (clients re-resolve), write the last checkpoint (the
        checkpointer's stop does), and be ``LEFT`` with its totals."""
        try:
            self._gate.close("this PS is leaving its PS set", timeout=10.0)
        except TimeoutError:
            log.warning("event=ps_leave_calls_running index=%d", self._service.index)
        totals = None
        if self._checkpointer is not None:
            self._checkpointer.stop()
            last = self._checkpointer.last
            totals = last.totals if last is not None else None
        self._left_totals = totals
        self.state = MemberState.LEFT

    def _needs_checkpointer(self) -> PsCheckpointer:
        if self._checkpointer is None or self._directory is None:
            raise InvalidSpecError(
                "checkpoint_dir: this PS has none; a PS-set change moves partitions through "
                "checkpoints (set --checkpoint-dir or FLEXJOB_PS_CHECKPOINT_DIR)"
            )
        return self._checkpointer
