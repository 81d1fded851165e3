"""Fixtures of the network-fault suite: nets of test hosts (``tests/support/hosts.py``),
torn down after each test, swept at the session's ends."""

from tests.support.host_fixtures import host_net, sweep_hosts

__all__ = ["host_net", "sweep_hosts"]
