"""The job master's gRPC port and its token: beyond loopback it does not listen without one;
with one, a call without it or with a wrong one is UNAUTHENTICATED and the right one works."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexjob.api.errors import FlexjobError
from flexjob.core.training.dataset import Dataset
from flexjob.core.training.master_config import RPC_SERVERS, MasterConfig
from flexjob.master.main import serve_master
from flexjob.master.service import MasterService
from flexjob.rpc.auth import InsecureBindError, master_token, write_token_file
from flexjob.rpc.client import MasterClient
from tests.support.local_jobs import run_flexjob

CONFIG = MasterConfig(job_name="auth", datasets=(Dataset(size=8, shard_size=4),))


@pytest.fixture(params=RPC_SERVERS)
def guarded(request: pytest.FixtureRequest) -> Iterator[str]:
    server = serve_master(MasterService(CONFIG.with_overrides(rpc__server=request.param)), "s3cret")
    yield server.address
    server.stop(0)


@pytest.mark.parametrize("kind", RPC_SERVERS)
@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3"])
def test_a_master_beyond_loopback_without_a_token_does_not_listen(host: str, kind: str) -> None:
    with pytest.raises(InsecureBindError, match="set FLEXJOB_MASTER_TOKEN"):
        serve_master(MasterService(CONFIG.with_overrides(host=host, rpc__server=kind)), None)


def test_flexjob_master_beyond_loopback_without_a_token_exits_naming_the_variables(
    tmp_path: Path,
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(
        "apiVersion: flexjob.dev/v1alpha1\nkind: ElasticJob\nmetadata: {name: j}\nspec:\n"
        "  replicaSpecs: {worker: {template: {spec: {containers: [{name: m, image: x}]}}}}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLEXJOB_MASTER_TOKEN")}
    out = run_flexjob(env, "master", "--job", str(job), "--host", "0.0.0.0", timeout=60)
    assert out.returncode == 2
    assert "refusing to listen on 0.0.0.0 without a bearer token" in out.stderr
    assert "FLEXJOB_MASTER_TOKEN or FLEXJOB_MASTER_TOKEN_FILE" in out.stderr


@pytest.mark.parametrize("token", ["", "wrong"])
def test_a_client_without_the_token_is_unauthenticated(guarded: str, token: str) -> None:
    with MasterClient(guarded, "intruder", token=token, retry_deadline=1) as client:
        with pytest.raises(FlexjobError, match="UNAUTHENTICATED: missing or wrong bearer"):
            client.report_shard(0)
        with pytest.raises(FlexjobError, match="UNAUTHENTICATED"):
            client.kv_set("k", b"v")
        with pytest.raises(FlexjobError, match="UNAUTHENTICATED"):  # on the shard stream
            client.lease_shards(1)


def test_a_client_with_the_token_from_its_file_is_served(guarded: str, tmp_path: Path) -> None:
    path = write_token_file(tmp_path / "master.token", "s3cret")
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["master.token"]  # no temp file left
    token = master_token({"FLEXJOB_MASTER_TOKEN_FILE": str(path)})
    with MasterClient(guarded, "worker-0", token=token) as client:
        shard = client.get_shard()
        assert shard.has_shard and client.report_shard(shard.shard_id)
        assert client.lease_shards(1, [shard.shard_id]).accepted == (True,)  # on the stream
