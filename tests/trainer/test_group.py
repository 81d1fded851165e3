from __future__ import annotations

import torch.distributed as dist

from flexjob.trainer.group import is_collective_error


def test_gloo_peer_errors_are_collective_errors() -> None:
    msg = "[gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:1"
    assert is_collective_error(RuntimeError(msg))
    assert is_collective_error(dist.DistBackendError("x"))


def test_user_errors_are_not_collective_errors() -> None:
    assert not is_collective_error(ValueError("shapes do not match"))
    assert not is_collective_error(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
