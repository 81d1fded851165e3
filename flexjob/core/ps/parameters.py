"""Everything one PS replica holds: the optimizer, its embedding tables and dense parameters.

``configure`` declares the model; the first declaration wins and later ones (every worker
sends one when it starts) must agree with it, so workers can join in any order. Dense
parameters are updated as whole tensors with one step count and a version that counts the
dense updates applied. Pure: no I/O, no locking (the PS shell's job).
"""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from flexjob.api.errors import InvalidSpecError, NotFoundError
from flexjob.core.ps.initializer import FloatArray
from flexjob.core.ps.optim import OptimizerSpec, StepArray, apply
from flexjob.core.ps.table import EmbeddingTable, TableSpec


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """What a trainer declares to a PS: the optimizer, the tables, initial dense values."""

    optimizer: OptimizerSpec
    tables: tuple[TableSpec, ...]
    dense: Mapping[str, FloatArray]


class PsStore:
    def __init__(self) -> None:
        self.optimizer: OptimizerSpec | None = None
        self.tables: dict[str, EmbeddingTable] = {}
        self.dense: dict[str, FloatArray] = {}
        self.dense_slots: dict[str, dict[str, FloatArray]] = {}
        self.dense_steps: dict[str, StepArray] = {}
        self.version = 0

    @property
    def configured(self) -> bool:
        return self.optimizer is not None

    def configure(self, model: ModelSpec) -> bool:
        """Declare the model; ``True`` when this call created it, ``False`` when it matched
        the one declared before. ``InvalidSpecError`` naming the field when it disagrees."""
        if self.optimizer is None:
            self.optimizer = model.optimizer
            for spec in model.tables:
                self.tables[spec.name] = EmbeddingTable(spec, model.optimizer)
            for name, value in model.dense.items():
                self.dense[name] = np.array(value, dtype=np.float32)
                self.dense_slots[name] = {
                    n: np.full(value.shape, model.optimizer.initial_slot(n), dtype=np.float32)
                    for n in model.optimizer.slot_names
                }
                self.dense_steps[name] = np.zeros(1, dtype=np.int64)
            return True
        if model.optimizer != self.optimizer:
            raise InvalidSpecError(
                f"optimizer: {model.optimizer} differs from the one declared: {self.optimizer}"
            )
        for spec in model.tables:
            held = self.tables.get(spec.name)
            if held is not None and held.spec != spec:
                raise InvalidSpecError(
                    f"tables[{spec.name}]: {spec} differs from the one declared: {held.spec}"
                )
        ours, theirs = sorted(self.tables), sorted(t.name for t in model.tables)
        if ours != theirs:
            raise InvalidSpecError(f"tables: {theirs} differ from the ones declared: {ours}")
        if sorted(model.dense) != sorted(self.dense):
            raise InvalidSpecError(
                f"dense: {sorted(model.dense)} differ from the ones declared: {sorted(self.dense)}"
            )
        return False

    def table(self, name: str) -> EmbeddingTable:
        try:
            return self.tables[name]
        except KeyError:
            raise NotFoundError(
                f"table: unknown table {name!r}; this PS holds {sorted(self.tables)}"
            ) from None

    def push_dense(self, grads: Mapping[str, FloatArray]) -> int:
        """Apply one dense gradient per named parameter; returns the new version. All names
        and shapes are checked before any update, so a bad push changes nothing."""
        opt = self._optimizer()
        for name, grad in grads.items():
            held = self.dense.get(name)
            if held is None:
                raise NotFoundError(
                    f"grads: unknown dense parameter {name!r}; this PS holds {sorted(self.dense)}"
                )
            if grad.shape != held.shape:
                raise InvalidSpecError(
                    f"grads[{name}]: shape {list(grad.shape)} != parameter shape {list(held.shape)}"
                )
        for name, grad in grads.items():
            param = self.dense[name].reshape(1, -1)
            slots = {k: v.reshape(1, -1) for k, v in self.dense_slots[name].items()}
            steps = self.dense_steps[name]
            steps += 1
            apply(opt, param, grad.reshape(1, -1).astype(np.float32), slots, steps)
        self.version += 1
        return self.version

    def _optimizer(self) -> OptimizerSpec:
        if self.optimizer is None:
            raise InvalidSpecError("model: this PS has no model yet; call Configure first")
        return self.optimizer
