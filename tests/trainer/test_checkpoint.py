from __future__ import annotations

from pathlib import Path

import pytest
import torch

from flexjob.trainer.checkpoint import Checkpointer


def _model() -> torch.nn.Module:
    return torch.nn.Linear(3, 2)


def test_checkpoint_restores_model_optimizer_sampler_and_step(tmp_path: Path) -> None:
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    ck = Checkpointer(tmp_path)
    ck.save(model=model, optimizer=opt, sampler_state={"epoch": 2}, step=7)

    other = _model()
    other_opt = torch.optim.SGD(other.parameters(), lr=0.1, momentum=0.9)
    state = ck.load(model=other, optimizer=other_opt)
    assert state is not None and state["step"] == 7 and state["sampler"] == {"epoch": 2}
    assert torch.equal(other.weight, model.weight)
    assert other_opt.state_dict()["state"].keys() == opt.state_dict()["state"].keys()


def test_failed_save_leaves_the_previous_checkpoint_and_no_temp_file(tmp_path: Path) -> None:
    model = _model()
    ck = Checkpointer(tmp_path)
    ck.save(model=model, step=1)
    with pytest.raises(Exception):  # noqa: B017 - any pickling error
        ck.save(model=model, step=2, extra={"bad": lambda: None})
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.pt"]
    state = ck.load(model=_model())
    assert state is not None and state["step"] == 1


def test_load_without_a_checkpoint_returns_none(tmp_path: Path) -> None:
    assert Checkpointer(tmp_path / "none").load(model=_model()) is None
