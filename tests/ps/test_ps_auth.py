"""A PS replica is guarded by its PS secret (``rpc.ps_auth``): a client without a credential of
the job is refused, a member (a node credential of the job) is served, and a PS without
credentials never listens beyond loopback."""

from contextlib import closing

import pytest

from flexjob.api.errors import FlexjobError
from flexjob.ps.service import PsService
from flexjob.rpc.auth import InsecureBindError, node_credential
from flexjob.rpc.ps_auth import PsCredentials
from flexjob.rpc.ps_client import PsClient
from flexjob.rpc.ps_server import serve_ps


def test_a_ps_with_credentials_refuses_strangers_and_serves_members() -> None:
    running = serve_ps(PsService(0, 1), credentials=PsCredentials.from_token("s3cret", 0))
    try:
        stranger = closing(PsClient(running.address, token="", retry_deadline=1.0))
        with stranger as c, pytest.raises(FlexjobError, match="UNAUTHENTICATED"):
            c.stats()
        member_credential = node_credential("s3cret", "worker-0")
        with closing(PsClient(running.address, token=member_credential)) as member:
            assert member.stats().rows == 0
    finally:
        running.stop()


def test_a_ps_without_credentials_refuses_to_listen_beyond_loopback() -> None:
    with pytest.raises(InsecureBindError, match="FLEXJOB_PS_SECRET"):
        serve_ps(PsService(0, 1), "0.0.0.0", 0)
