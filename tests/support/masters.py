"""A master for a test: its config with the tests' defaults, and a fixture body that stops it."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

from flexjob.core.training.master_config import MasterConfig


def master_config(job_dir: Path, name: str, **fields: Any) -> MasterConfig:
    """The config of a master named ``name`` that keeps its state in ``job_dir`` and its KV store
    in itself (no host store); ``fields`` set the rest as ``MasterConfig`` names them."""
    return MasterConfig(job_name=name, job_dir=str(job_dir), host_store=False, **fields)


class _Stops(Protocol):
    def stop(self) -> None: ...


S = TypeVar("S", bound=_Stops)


def serving(handle: S) -> Iterator[S]:
    """A fixture's body (``yield from serving(start_master(config))``): ``handle`` for the test,
    stopped after it."""
    try:
        yield handle
    finally:
        handle.stop()
