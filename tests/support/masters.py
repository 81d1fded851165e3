"""A master for a test: its config with the tests' defaults (``master_config``), and a fixture
body that stops the master (or PS) it served (``serving``)."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

from flexjob.core.training.master_config import MasterConfig


def master_config(name: str, job_dir: Path | str, **settings: Any) -> MasterConfig:
    """The config of a master named ``name`` that keeps its state in ``job_dir`` and its KV store
    in itself (no host store); ``settings`` change the rest as ``MasterConfig.with_overrides``
    names them (``datasets=...``, ``rendezvous__max_nodes=2``; a None value is ignored)."""
    config = MasterConfig(job_name=name, job_dir=str(job_dir), host_store=False)
    return config.with_overrides(**settings)


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
