"""PS optimizers match torch's own optimizers on the same gradients (to 1e-6)."""

from collections.abc import Callable

import numpy as np
import pytest
import torch

from flexjob.core.ps.optim import OptimizerKind, OptimizerSpec, apply

Factory = Callable[[list[torch.nn.Parameter]], torch.optim.Optimizer]

CASES: list[tuple[OptimizerSpec, Factory]] = [
    (OptimizerSpec(OptimizerKind.SGD, lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
    (
        OptimizerSpec(OptimizerKind.SGD, lr=0.05, momentum=0.9),
        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
    ),
    (
        OptimizerSpec(OptimizerKind.ADAGRAD, lr=0.1, initial_accumulator_value=0.1),
        lambda p: torch.optim.Adagrad(p, lr=0.1, initial_accumulator_value=0.1),
    ),
    (OptimizerSpec(OptimizerKind.ADAGRAD, lr=0.3), lambda p: torch.optim.Adagrad(p, lr=0.3)),
    (OptimizerSpec(OptimizerKind.ADAM, lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01)),
    (
        OptimizerSpec(OptimizerKind.ADAM, lr=0.002, beta1=0.8, beta2=0.99, eps=1e-6),
        lambda p: torch.optim.Adam(p, lr=0.002, betas=(0.8, 0.99), eps=1e-6),
    ),
]


def _slots(spec: OptimizerSpec, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    return {n: np.full(shape, spec.initial_slot(n), dtype=np.float32) for n in spec.slot_names}


@pytest.mark.parametrize(("spec", "make"), CASES, ids=lambda c: getattr(c, "kind", ""))
def test_dense_update_matches_torch(spec: OptimizerSpec, make: Factory) -> None:
    rng = np.random.default_rng(0)
    start = rng.normal(size=(6, 5)).astype(np.float32)
    theirs = torch.nn.Parameter(torch.from_numpy(start.copy()))
    opt = make([theirs])
    ours = start.copy()
    slots = _slots(spec, ours.shape)
    steps = np.zeros(ours.shape[0], dtype=np.int64)
    for _ in range(25):
        grad = rng.normal(size=start.shape).astype(np.float32)
        theirs.grad = torch.from_numpy(grad.copy())
        opt.step()
        steps += 1
        apply(spec, ours, grad, slots, steps)
    np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=0, atol=1e-6)


@pytest.mark.parametrize(("spec", "make"), CASES, ids=lambda c: getattr(c, "kind", ""))
def test_each_embedding_row_updates_like_its_own_torch_parameter(
    spec: OptimizerSpec, make: Factory
) -> None:
    """Per row: a row updated in 7 of 20 batches matches a torch parameter stepped 7 times."""
    rng = np.random.default_rng(1)
    rows, dim = 4, 3
    start = rng.normal(size=(rows, dim)).astype(np.float32)
    theirs = [torch.nn.Parameter(torch.from_numpy(start[r].copy())) for r in range(rows)]
    opts = [make([p]) for p in theirs]
    table = start.copy()
    slots = _slots(spec, table.shape)
    steps = np.zeros(rows, dtype=np.int64)
    for _ in range(20):
        touched = np.flatnonzero(rng.random(rows) < 0.4)
        if touched.size == 0:
            continue
        grads = rng.normal(size=(touched.size, dim)).astype(np.float32)
        for i, r in enumerate(touched):
            theirs[r].grad = torch.from_numpy(grads[i].copy())
            opts[r].step()
        steps[touched] += 1
        params = table[touched]
        row_slots = {n: s[touched] for n, s in slots.items()}
        apply(spec, params, grads, row_slots, steps[touched])
        table[touched] = params
        for n, s in row_slots.items():
            slots[n][touched] = s
    for r in range(rows):
        np.testing.assert_allclose(table[r], theirs[r].detach().numpy(), rtol=0, atol=1e-6)


def test_bad_options_name_the_field() -> None:
    with pytest.raises(ValueError, match="lr must be > 0"):
        OptimizerSpec(lr=0)
    with pytest.raises(ValueError, match="momentum"):
        OptimizerSpec(momentum=1.5)
    with pytest.raises(ValueError, match="beta1 and beta2"):
        OptimizerSpec(OptimizerKind.ADAM, beta2=1.0)
