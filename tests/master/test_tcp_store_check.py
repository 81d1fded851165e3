"""The master's store matches the installed torch: flexjob's server passes a check with torch's
own client (cached per torch version), and a failed check serves torch's own TCPStore."""

import datetime
import logging
import socket
from pathlib import Path

import pytest
from torch.distributed import TCPStore  # type: ignore[attr-defined]

from flexjob.master import tcp_store_check
from flexjob.master.tcp_store import TcpStoreServer
from flexjob.master.tcp_store_check import (
    StoreChoice,
    TorchStoreServer,
    choose_store,
    run_check,
    serve_store,
)


def listener() -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock.detach()


@pytest.mark.timeout(180)
def test_flexjobs_store_passes_the_check_with_the_installed_torchs_client() -> None:
    assert run_check() is None


def test_the_check_runs_once_per_torch_version(tmp_path: Path) -> None:
    calls: list[int] = []

    def check() -> None:
        calls.append(1)

    first = choose_store(tmp_path, check=check)
    again = choose_store(tmp_path, check=check)
    assert first == again and first.ours and calls == [1]
    assert "passed the check" in first.why


def test_a_failed_check_serves_torchs_own_store_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    choice = choose_store(tmp_path, check=lambda: "unknown query 12")
    assert not choice.ours and "unknown query 12" in choice.why
    with caplog.at_level(logging.WARNING, logger=tcp_store_check.__name__):
        server = serve_store(listener(), "127.0.0.1", choice)
    try:
        assert isinstance(server, TorchStoreServer)
        assert "kind=torch" in caplog.text and "unknown query 12" in caplog.text
        client = TCPStore(
            "127.0.0.1", server.port, is_master=False, timeout=datetime.timedelta(seconds=30)
        )
        client.set("k", b"v")
        assert client.get("k") == b"v" and client.add("n", 3) == 3
    finally:
        server.stop()


def test_a_passed_check_serves_flexjobs_store(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=tcp_store_check.__name__):
        server = serve_store(listener(), "127.0.0.1", StoreChoice(True, "checked"))
    try:
        assert isinstance(server, TcpStoreServer) and "kind=flexjob" in caplog.text
    finally:
        server.stop()


def test_without_torch_the_store_is_flexjobs_unchecked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A control-plane install has no torch (tests/test_no_torch_install.py); its metadata
    # lookup is replaced here because this environment has torch.
    monkeypatch.setattr(tcp_store_check, "torch_version", lambda: None)
    choice = choose_store(tmp_path, check=lambda: "never run")
    assert choice.ours and "not installed" in choice.why
