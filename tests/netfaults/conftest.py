"""Fixtures of the network-fault suite: nets of test hosts (``tests/support/hosts.py``),
torn down after each test, swept at the session's ends; the ``netfault`` runs only on
request."""

import pytest

from tests.support.host_fixtures import host_net, sweep_hosts

__all__ = ["host_net", "sweep_hosts"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long fault runs (``netfault``, minutes each) run only when asked for with
    ``-m netfault``; the default suite skips them, saying so."""
    if "netfault" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="long network-fault run: select it with -m netfault")
    for item in items:
        if item.get_closest_marker("netfault") is not None:
            item.add_marker(skip)
