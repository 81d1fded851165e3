"""``spec.brainService`` as DLRover writes it (``host:port``) reaches flexjob's brain: the
master's config turns it into the brain's HTTP URL and a real `flexjob brain` answers there;
forms flexjob does not take are refused at validation, naming the ones it does."""

from pathlib import Path

import pytest
import yaml

from flexjob.api.load import job_from_dict
from flexjob.api.validate import validate
from flexjob.core.training.master_config import MasterConfig
from flexjob.rpc.brain_client import BrainClient
from tests.api.specs import EXAMPLES
from tests.support.brain import brain_process


def _dlrover(brain: str) -> dict:  # type: ignore[type-arg]
    doc = yaml.safe_load((EXAMPLES / "dlrover-elasticjob.yaml").read_text())
    doc["spec"]["brainService"] = brain
    return doc  # type: ignore[no-any-return]


def test_dlrovers_host_port_reaches_a_running_flexjob_brain(tmp_path: Path) -> None:
    with brain_process(f"sqlite:///{tmp_path}/brain.sqlite", tmp_path / "brain.log") as (_, url):
        host_port = url.removeprefix("http://").rstrip("/")
        doc = _dlrover(host_port)
        assert validate(doc) == []
        config = MasterConfig.from_job(job_from_dict(doc))
        assert config.optimizer.brain_url == f"http://{host_port}"
        with BrainClient(config.optimizer.brain_url) as client:
            assert client.healthy()


@pytest.mark.parametrize("given", ["http://brain:8000", "https://brain.example/api"])
def test_a_url_is_taken_as_written(given: str) -> None:
    assert MasterConfig.from_job(job_from_dict(_dlrover(given))).optimizer.brain_url == given


@pytest.mark.parametrize("given", ["grpc://brain:50001", "brain", "brain:0", "brain:70000"])
def test_another_form_is_refused_naming_the_forms_taken(given: str) -> None:
    [problem] = validate(_dlrover(given))
    assert problem.path == "spec.brainService"
    assert "host:port (DLRover's form" in problem.message and "https://" in problem.message
