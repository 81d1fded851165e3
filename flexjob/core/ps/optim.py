"""Optimizers a PS applies to its parameters: SGD (with momentum), Adagrad and Adam.

Each matches the update of torch's own optimizer with default options other than those named
here (``tests/core/ps/test_ps_optim.py`` checks to 1e-6). Embedding tables are updated per row:
every row keeps its own slots and its own step count (the count of updates that row got), so a
row touched rarely gets Adam's bias correction of its own few steps, as torch's ``SparseAdam``
does. Dense tensors are one "row" with one step count. Updates happen in place on the arrays
the PS owns. Pure: no I/O.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]
StepArray = npt.NDArray[np.int64]


class OptimizerKind(StrEnum):
    SGD = "sgd"
    ADAGRAD = "adagrad"
    ADAM = "adam"


#: Per-element state each optimizer keeps beside a parameter (same shape as it).
SLOTS: Mapping[OptimizerKind, tuple[str, ...]] = {
    OptimizerKind.SGD: ("momentum",),
    OptimizerKind.ADAGRAD: ("sum",),
    OptimizerKind.ADAM: ("exp_avg", "exp_avg_sq"),
}


@dataclass(frozen=True, slots=True)
class OptimizerSpec:
    """An optimizer and its options (torch's names and defaults, except ``lr``)."""

    kind: OptimizerKind = OptimizerKind.SGD
    lr: float = 0.01
    momentum: float = 0.0  # SGD
    initial_accumulator_value: float = 0.0  # Adagrad
    beta1: float = 0.9  # Adam
    beta2: float = 0.999  # Adam
    eps: float = 0.0  # 0: the optimizer's torch default (Adagrad 1e-10, Adam 1e-8)

    def __post_init__(self) -> None:
        problems = []
        if not self.lr > 0:
            problems.append(f"lr must be > 0, got {self.lr}")
        if not 0.0 <= self.momentum < 1.0:
            problems.append(f"momentum must be in [0, 1), got {self.momentum}")
        if not (0.0 <= self.beta1 < 1.0 and 0.0 <= self.beta2 < 1.0):
            problems.append(f"beta1 and beta2 must be in [0, 1), got {self.beta1}, {self.beta2}")
        if self.eps < 0:
            problems.append(f"eps must be >= 0, got {self.eps}")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def epsilon(self) -> float:
        if self.eps:
            return self.eps
        return 1e-10 if self.kind is OptimizerKind.ADAGRAD else 1e-8

    @property
    def slot_names(self) -> tuple[str, ...]:
        if self.kind is OptimizerKind.SGD and self.momentum == 0.0:
            return ()
        return SLOTS[self.kind]

    def initial_slot(self, name: str) -> float:
        """The value a slot starts at."""
        return self.initial_accumulator_value if name == "sum" else 0.0


def apply(
    spec: OptimizerSpec,
    params: FloatArray,
    grads: FloatArray,
    slots: Mapping[str, FloatArray],
    steps: StepArray,
) -> None:
    """Update ``params`` (``rows x dim``) with ``grads`` in place.

    ``slots`` holds ``spec.slot_names`` arrays shaped like ``params``; ``steps`` (``rows``)
    is each row's update count *including* this one (the caller increments it first).
    """
    lr = np.float32(spec.lr)
    if spec.kind is OptimizerKind.SGD:
        if spec.momentum:
            buf = slots["momentum"]
            first = (steps == 1)[:, None]
            np.copyto(buf, np.where(first, grads, buf * np.float32(spec.momentum) + grads))
            params -= lr * buf
        else:
            params -= lr * grads
    elif spec.kind is OptimizerKind.ADAGRAD:
        acc = slots["sum"]
        acc += grads * grads
        params -= lr * grads / (np.sqrt(acc) + np.float32(spec.epsilon))
    else:
        params -= _adam_step(spec, grads, slots["exp_avg"], slots["exp_avg_sq"], steps)


def _adam_step(
    spec: OptimizerSpec, grads: FloatArray, m: FloatArray, v: FloatArray, steps: StepArray
) -> FloatArray:
    """Update Adam's moments in place; the amount to subtract from the parameters. Same
    operation order as torch's single-tensor Adam (lerp, then addcmul; bias corrections in
    float64), so float32 rounding agrees too."""
    m += np.float32(1.0 - spec.beta1) * (grads - m)
    v *= np.float32(spec.beta2)
    v += grads * grads * np.float32(1.0 - spec.beta2)
    t = steps.astype(np.float64)[:, None]
    step_size = (spec.lr / (1.0 - spec.beta1**t)).astype(np.float32)
    bias2_sqrt = np.sqrt(1.0 - spec.beta2**t).astype(np.float32)
    denom = np.sqrt(v) / bias2_sqrt + np.float32(spec.epsilon)
    update: FloatArray = (step_size * (m / denom)).astype(np.float32, copy=False)
    return update
