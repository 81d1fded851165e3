"""pytest fixtures over ``tests/support/hosts.py``: ``host_net`` makes nets of test hosts that
are torn down after the test (also a failed one), ``sweep_hosts`` (session, autouse where
imported) deletes at the end of the session whatever namespaces of this process are left and
at its start those of test runs that died. Tests skip, saying why, where hosts cannot be
made."""

from collections.abc import Callable, Iterator

import pytest

from tests.support import hosts


@pytest.fixture(scope="session", autouse=True)
def sweep_hosts() -> Iterator[None]:
    hosts.sweep()  # namespaces of earlier runs killed before their finalizers ran
    yield
    hosts.sweep(include_own=True)


@pytest.fixture
def host_net() -> Iterator[Callable[[int], hosts.HostNet]]:
    """``host_net(n)``: a net of ``n`` hosts, closed when the test ends."""
    why = hosts.unavailable()
    if why is not None:
        pytest.skip(f"no test hosts here: {why}")
    made: list[hosts.HostNet] = []

    def make(n: int) -> hosts.HostNet:
        net = hosts.HostNet(n)
        made.append(net)
        return net

    yield make
    for net in made:
        net.close()
