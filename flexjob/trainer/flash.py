"""Flash checkpoints: the training state copied into shared memory in the step, written to
storage in the background by the agent, restored from memory first.

``FlashCheckpoint.save`` blocks only for the copy: the tensor bytes go into a preallocated
``/dev/shm`` slot reused across saves (two slots: the last complete copy survives a kill
mid-write), the small rest is pickled after them, and the seal is written last
(``flexjob.core.training.flash``). The agent is told on the socket it handed the worker and writes
the slot to ``<checkpoint dir>/checkpoint.flash``; a failed worker's last complete copy is written
by the agent too. Without an agent, a thread of this process does the writing.
``restore`` takes the shared-memory copy when it is complete and at least as new as storage's,
else storage's. Not a distributed checkpoint: one process's full state, like ``Checkpointer``.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import logging
import mmap
import os
import pickle
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Unpack

import torch

from flexjob.api import names
from flexjob.core.training.flash import (
    HEADER_SIZE,
    SEAL_OFFSET,
    UNSEALED,
    RestoreFrom,
    SlotHeader,
    aligned,
    decode_header,
    encode_header,
    encode_seal,
    newest_sealed,
    next_seq,
    restore_from,
    slot_to_write,
)
from flexjob.trainer import flash_files
from flexjob.trainer.checkpoint import TrainState, training_state
from flexjob.trainer.flash_files import FlashNotice, locked
from flexjob.trainer.settings import TrainerSettings, current_or

log = logging.getLogger(__name__)

#: Bytes a slot is allocated beyond the copy it is grown for.
SLACK = 1 << 20


def flash_enabled(given: bool | None, settings: TrainerSettings | None = None) -> bool:
    """``given``, else ``$FLEXJOB_FLASH_CHECKPOINT`` (``1``/``0``); off by default."""
    if given is not None:
        return given
    value = (current_or(settings).flash_checkpoint or "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{names.ENV_FLASH_CHECKPOINT}={value!r}: use 1 (on) or 0 (off)")


@dataclass(frozen=True, slots=True)
class FlashTensorRef:
    """Where a tensor of the state went: its index in the copy's tensor table."""

    index: int


_SAFE = {
    ("collections", "OrderedDict"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "complex"),
    ("builtins", "slice"),
    (__name__, "FlashTensorRef"),
}


class _Unpickler(pickle.Unpickler):
    """Only plain containers and tensor references (like ``torch.load(weights_only=True)``)."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _SAFE:
            raise pickle.UnpicklingError(f"flash checkpoint holds {module}.{name}: not allowed")
        return super().find_class(module, name)


def _map_leaves(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """``value`` with ``leaf`` applied to everything that is not a dict, list or tuple."""
    if isinstance(value, dict):
        items = ((k, _map_leaves(v, leaf)) for k, v in value.items())
        return OrderedDict(items) if isinstance(value, OrderedDict) else dict(items)
    if isinstance(value, list | tuple):
        mapped = [_map_leaves(v, leaf) for v in value]
        return mapped if isinstance(value, list) else tuple(mapped)
    return leaf(value)


def _strip(value: Any, tensors: list[torch.Tensor]) -> Any:
    """``value`` with every tensor replaced by a ``FlashTensorRef`` (collected in order)."""

    def ref(leaf: Any) -> Any:
        if not isinstance(leaf, torch.Tensor):
            return leaf
        tensors.append(leaf)
        return FlashTensorRef(len(tensors) - 1)

    return _map_leaves(value, ref)


def _fill(value: Any, tensors: list[torch.Tensor]) -> Any:
    """``value`` with every ``FlashTensorRef`` replaced by its tensor."""
    return _map_leaves(value, lambda v: tensors[v.index] if isinstance(v, FlashTensorRef) else v)


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"flash checkpoint names an unknown dtype {name!r}")
    return dtype


class _Slot:
    """One shared-memory slot file, mapped once and grown only when the state grows."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self.size = 0
        self._map: mmap.mmap | None = None
        self.buffer = torch.empty(0, dtype=torch.uint8)
        current = os.fstat(self.fd).st_size
        if current >= HEADER_SIZE:
            self._map_size(current)

    def header(self) -> SlotHeader | None:
        return decode_header(os.pread(self.fd, HEADER_SIZE, 0))

    def ensure(self, size: int) -> None:
        """At least ``size`` bytes mapped; grown with room to spare (a skeleton that grows
        by a few bytes, as step counters do, never remaps the slot)."""
        if size <= self.size:
            return
        size = (size + SLACK + 4095) // 4096 * 4096
        os.ftruncate(self.fd, size)
        self._map_size(size)

    def _map_size(self, size: int) -> None:
        self.buffer = torch.empty(0, dtype=torch.uint8)  # drop the view of the old mapping
        if self._map is not None:
            self._map.close()
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)  # fault the pages in now
        self._map = mmap.mmap(self.fd, size, flags=flags)
        self.buffer = torch.frombuffer(self._map, dtype=torch.uint8)
        self.size = size

    def copy_in(self, offset: int, tensor: torch.Tensor, nbytes: int) -> None:
        """The bytes of ``tensor`` at ``offset``: one plain memcpy for a dense CPU tensor (no
        thread pool: torch's parallel copy stalls for 10x longer when the cores are busy,
        measured on a loaded 2-core machine), else torch's copy (a GPU tensor, a view)."""
        if nbytes == 0:
            return
        plain = not tensor.is_conj() and not tensor.is_neg()
        if tensor.device.type == "cpu" and tensor.is_contiguous() and plain:
            ctypes.memmove(self.buffer.data_ptr() + offset, tensor.data_ptr(), nbytes)
            return
        with torch.no_grad():
            target = self.buffer[offset : offset + nbytes].view(tensor.dtype)
            target.view(tensor.shape).copy_(tensor)

    def write(self, offset: int, data: bytes) -> None:
        assert self._map is not None
        self._map[offset : offset + len(data)] = data

    def close(self) -> None:
        self.buffer = torch.empty(0, dtype=torch.uint8)
        if self._map is not None:
            self._map.close()
            self._map = None
        os.close(self.fd)


def _load_copy(fd: int, header: SlotHeader) -> dict[str, Any]:
    """The state held by the complete copy in ``fd`` (tensors copied out of it)."""
    mapped = mmap.mmap(fd, header.total_len, access=mmap.ACCESS_COPY)
    try:
        raw = torch.frombuffer(mapped, dtype=torch.uint8)
        start = HEADER_SIZE + header.data_len
        skeleton, table = _Unpickler(io.BytesIO(mapped[start : start + header.meta_len])).load()
        tensors = []
        for dtype_name, shape, offset, nbytes in table:
            at = HEADER_SIZE + offset
            view = raw[at : at + nbytes].view(_dtype(dtype_name)).view(shape)
            tensors.append(view.clone())
            del view
        del raw
        state: dict[str, Any] = _fill(skeleton, tensors)
        return state
    finally:
        mapped.close()


@dataclass(frozen=True, slots=True)
class StagedCopy:
    """A copy whose tensors are in its slot, waiting for ``FlashCheckpoint.seal``."""

    slot: _Slot
    seq: int
    skeleton: dict[str, Any]
    table: list[tuple[str, tuple[int, ...], int, int]]
    data_len: int


class FlashCheckpoint:
    """One process's flash copies: ``save`` in the step, ``restore`` at start."""

    def __init__(
        self,
        storage_dir: str | os.PathLike[str],
        shm_dir: str | os.PathLike[str],
        notice: FlashNotice | None = None,
    ) -> None:
        self.storage_dir = os.path.abspath(os.fspath(storage_dir))
        self.shm_dir = Path(shm_dir)
        self._notice = notice
        self._slots: list[_Slot] | None = None
        self._writer: _BackgroundWriter | None = None
        #: Saves done and saves skipped (the slot to write was being written to storage).
        self.saves = 0
        self.skipped = 0
        self.last_seq = 0

    @classmethod
    def for_process(
        cls, storage_dir: str | os.PathLike[str], node_id: str, local_rank: int
    ) -> FlashCheckpoint:
        """The flash copies of this training process: the agent's socket and directory when
        an agent started it, else a directory of its own and a writer thread."""
        shm_dir = flash_files.shm_dir_from_env(storage_dir, node_id, local_rank)
        return cls(storage_dir, shm_dir, FlashNotice.from_env())

    @property
    def storage_path(self) -> Path:
        return flash_files.storage_file(self.storage_dir)

    def _open(self) -> list[_Slot]:
        if self._slots is None:
            self.shm_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._slots = [_Slot(p) for p in flash_files.slot_paths(self.shm_dir)]
        return self._slots

    def save(self, *, persist: bool = False, **train: Unpack[TrainState]) -> bool:
        """Copy the state into a shared-memory slot; with ``persist`` also have it written to
        storage in the background. False when skipped: the slot it would overwrite is being
        written to storage (the previous copy stays the newest)."""
        staged = self.stage(
            model=train["model"], optimizer=train.get("optimizer"), extra=train.get("extra")
        )
        if staged is None:
            return False
        sampler_state, step = train.get("sampler_state"), train.get("step", 0)
        self.seal(staged, sampler_state=sampler_state, step=step, persist=persist)
        return True

    def stage(
        self,
        *,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer | None = None,
        extra: dict[str, Any] | None = None,
    ) -> StagedCopy | None:
        """The first half of a save: copy the tensors into a slot that stays unsealed (and
        locked) until ``seal`` or ``abandon``. The trainer commits the step in between, so
        the copy's step and the shards the master counts done change together. None when
        skipped (see ``save``)."""
        state = training_state({"model": model, "optimizer": optimizer, "extra": extra})
        tensors: list[torch.Tensor] = []
        skeleton = _strip(state, tensors)
        table = []
        offset = 0
        for t in tensors:
            if t.layout is not torch.strided:
                raise ValueError(f"flash checkpoint: a {t.layout} tensor cannot be copied")
            nbytes = t.numel() * t.element_size()
            table.append((str(t.dtype), tuple(t.shape), offset, nbytes))
            offset = aligned(offset + nbytes)
        slots = self._open()
        headers = [s.header() for s in slots]
        slot = slots[slot_to_write(headers)]
        if not flash_files.try_lock(slot.fd):
            self.skipped += 1
            log.debug("flash save skipped: %s is being written to storage", slot.path)
            return None
        try:
            slot.ensure(HEADER_SIZE + offset)
            slot.write(SEAL_OFFSET, UNSEALED)
            for t, (_, _, at, nbytes) in zip(tensors, table, strict=True):
                slot.copy_in(HEADER_SIZE + at, t, nbytes)
        except BaseException:
            flash_files.unlock(slot.fd)
            raise
        seq = max(next_seq(headers), self.last_seq + 1)
        return StagedCopy(slot, seq, skeleton, table, offset)

    def seal(
        self,
        staged: StagedCopy,
        *,
        sampler_state: dict[str, Any] | None = None,
        step: int = 0,
        persist: bool = False,
    ) -> None:
        """The second half: write the small rest, the header and, last, the seal."""
        slot = staged.slot
        try:
            skeleton = {**staged.skeleton, "sampler": sampler_state or {}, "step": step}
            meta = pickle.dumps((skeleton, staged.table), protocol=pickle.HIGHEST_PROTOCOL)
            slot.ensure(HEADER_SIZE + staged.data_len + len(meta))
            slot.write(HEADER_SIZE + staged.data_len, meta)
            header = encode_header(staged.seq, step, staged.data_len, len(meta), self.storage_dir)
            slot.write(0, header)
            slot.write(SEAL_OFFSET, encode_seal(staged.seq))
        finally:
            flash_files.unlock(slot.fd)
        self.saves += 1
        self.last_seq = staged.seq
        self._tell(staged.seq, step, persist)

    @contextlib.contextmanager
    def saving(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer | None,
        *,
        step: int,
        persist: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """``stage`` on entry; the body commits the step and fills the dict it gets with the
        sampler's state; ``seal`` on a clean exit, ``abandon`` on an error (or a skip)."""
        staged = self.stage(model=model, optimizer=optimizer)
        sampler_state: dict[str, Any] = {}
        try:
            yield sampler_state
        except BaseException:
            if staged is not None:
                self.abandon(staged)
            raise
        if staged is not None:
            self.seal(staged, sampler_state=sampler_state, step=step, persist=persist)

    @staticmethod
    def abandon(staged: StagedCopy) -> None:
        """Give up a staged copy (the step was not committed): it stays unsealed."""
        flash_files.unlock(staged.slot.fd)

    def _tell(self, seq: int, step: int, persist: bool) -> None:
        if self._notice is not None:
            self._notice.send(seq, step, persist)
        elif persist:
            if self._writer is None:
                self._writer = _BackgroundWriter(self.shm_dir)
            self._writer.request()

    def memory_header(self) -> SlotHeader | None:
        """The newest complete shared-memory copy of this process's checkpoint directory."""
        headers = [flash_files.read_header(p) for p in flash_files.slot_paths(self.shm_dir)]
        ours = [h if h is not None and h.storage_dir == self.storage_dir else None for h in headers]
        best = newest_sealed(ours)
        return ours[best] if best is not None else None

    def restore(
        self, *, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None
    ) -> dict[str, Any] | None:
        """Load the newest complete flash copy into ``model``/``optimizer`` and return the
        state (``"source"``: memory or storage), or None when there is none."""
        for _ in range(3):  # a copy overwritten between the look and the lock: look again
            memory = self.memory_header()
            storage = flash_files.read_header(self.storage_path)
            source = restore_from(memory, storage)
            if source is RestoreFrom.NONE:
                return None
            state = self._read(source, memory if source is RestoreFrom.MEMORY else storage)
            if state is not None:
                break
        else:
            return None
        model.load_state_dict(state["model"])
        if optimizer is not None and state.get("optimizer") is not None:
            optimizer.load_state_dict(state["optimizer"])
        state["source"] = source.value
        log.info("resumed from the flash checkpoint in %s at step %d", source.value, state["step"])
        return state

    def _read(self, source: RestoreFrom, want: SlotHeader | None) -> dict[str, Any] | None:
        assert want is not None
        if source is RestoreFrom.STORAGE:
            paths = [self.storage_path]
        else:
            paths = flash_files.slot_paths(self.shm_dir)
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                with locked(fd, exclusive=False) as got:
                    header = decode_header(os.pread(fd, HEADER_SIZE, 0)) if got else None
                    if header == want:
                        return _load_copy(fd, header)
            finally:
                os.close(fd)
        return None

    def finish(self, timeout_s: float = 600.0) -> None:
        """The run is done: wait for this process's own writes to storage (none with an
        agent: the agent writes and frees the memory), then free its shared memory."""
        if self._writer is not None:
            self._writer.close(timeout_s)
            self._writer = None
            self.close()
            flash_files.remove_slots(self.shm_dir)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close(60.0)
            self._writer = None
        if self._slots is not None:
            for slot in self._slots:
                slot.close()
            self._slots = None
        if self._notice is not None:
            self._notice.close()
            self._notice = None


class _BackgroundWriter:
    """Without an agent: a thread of the trainer's process writes the newest copy to storage."""

    def __init__(self, shm_dir: Path) -> None:
        self._shm_dir = shm_dir
        self._requests: queue.Queue[bool] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="flexjob-flash", daemon=True)
        self._thread.start()

    def request(self) -> None:
        self._requests.put(True)

    def _run(self) -> None:
        while True:
            stop = not self._requests.get()
            while not self._requests.empty():  # several requests: the newest copy once
                stop = not self._requests.get_nowait() or stop
            try:
                flash_files.persist_latest(self._shm_dir)
            except OSError as exc:
                log.warning("flash checkpoint not written to storage: %s", exc)
            if stop:
                return

    def close(self, timeout_s: float) -> None:
        self._requests.put(False)
        self._thread.join(timeout_s)
