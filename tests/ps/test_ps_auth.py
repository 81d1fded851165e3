"""A PS replica is guarded by the job's master token like the master: a client without the
token is refused, one with it is served, and a token-less PS never listens beyond loopback."""

import pytest

from flexjob.api.errors import FlexjobError
from flexjob.ps.service import PsService
from flexjob.rpc.auth import InsecureBindError
from flexjob.rpc.ps_client import PsClient
from flexjob.rpc.ps_server import serve_ps


def test_a_ps_with_a_token_refuses_clients_without_it_and_serves_those_with_it() -> None:
    running = serve_ps(PsService(0, 1), "127.0.0.1", 0, token="s3cret")
    address = f"127.0.0.1:{running.port}"
    try:
        stranger = PsClient(address, token="", retry_deadline=1.0)
        with pytest.raises(FlexjobError, match="UNAUTHENTICATED"):
            stranger.stats()
        stranger.close()
        member = PsClient(address, token="s3cret", retry_deadline=5.0)
        assert member.stats().rows == 0
        member.close()
    finally:
        running.stop()


def test_a_ps_without_a_token_refuses_to_listen_beyond_loopback() -> None:
    with pytest.raises(InsecureBindError, match="FLEXJOB_MASTER_TOKEN"):
        serve_ps(PsService(0, 1), "0.0.0.0", 0)
