"""The interface an agent's workers bind gloo to (``GLOO_SOCKET_IFNAME``): the one holding
the node's ``--address``; none on loopback or for an address no interface has."""

import socket

import psutil
import pytest

from flexjob.agent.workers import interface_of


def test_loopback_leaves_gloo_its_default() -> None:
    assert interface_of("127.0.0.1") is None


def test_an_address_of_this_machine_names_its_interface() -> None:
    found = [
        (name, a.address)
        for name, addrs in psutil.net_if_addrs().items()
        for a in addrs
        if a.family == socket.AF_INET and not a.address.startswith("127.")
    ]
    if not found:
        pytest.skip("this machine has no non-loopback IPv4 address")
    name, address = found[0]
    assert interface_of(address) == name


def test_an_address_no_interface_holds_names_none() -> None:
    assert interface_of("192.0.2.77") is None  # TEST-NET-1: never assigned
