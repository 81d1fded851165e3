"""Names that would point a path outside the job's home, met where a job is admitted: a
foreign job format's name or namespace (``..``, an absolute path, a NUL, 300 characters), a
job row that reached the local database without ``create_job``'s check, a ``metadata.uid``
(its master's state folder is named for it), and the path builders of ``core.operator.job_master``
that every platform's reconcile uses. Each is refused naming the field, and nothing beside
the home is written, nothing is run."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from flexjob.api import ElasticJob
from flexjob.api.errors import InvalidSpecError
from flexjob.api.load import load_job
from flexjob.api.problems import SpecError
from flexjob.core.operator.job_master import master_token_file, with_job_master
from flexjob.operator.local.loop import local_job_master
from flexjob.operator.local.runner import jobs_without_operator, run_job
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import local_job

from .conftest import Home

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "specs"
FOREIGN = ["dijob-v1.yaml", "pytorchjob.yaml", "elasticaijob.yaml", "dlrover-elasticjob.yaml"]
#: Names that climb out (the home's sentinel is three levels above a job's folder), are
#: absolute, hold a NUL, or are longer than any path part.
HOSTILE = ["../../../x", "..", "/abs/x", "a\0b", "a" * 300]
FIELDS = ["name", "namespace"]


def _foreign(spec: str, field: str, bad: str) -> str:
    docs = list(yaml.safe_load_all((EXAMPLES / spec).read_text()))
    docs[0]["metadata"] = {**docs[0].get("metadata", {}), field: bad}
    return yaml.safe_dump_all(docs)


@pytest.mark.parametrize("bad", HOSTILE, ids=repr)
@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("spec", FOREIGN)
def test_a_foreign_job_named_outside_its_home_is_refused_naming_the_field(
    spec: str, field: str, bad: str
) -> None:
    with pytest.raises(SpecError) as refused:
        load_job(_foreign(spec, field, bad))
    assert f"metadata.{field}" in str(refused.value)


def _smuggle(home: Home, namespace: str, name: str) -> None:
    """A job row named ``namespace``/``name`` written straight into the local database (as
    a database no ``create_job`` check wrote would hold it)."""
    job = local_job("victim", None, "pass", workers=1)
    job.metadata.name, job.metadata.namespace = name, namespace
    platform = LocalPlatform(home.path)
    try:
        with platform.db.transaction() as conn:
            conn.execute(
                "INSERT INTO jobs VALUES (?, ?, ?, ?, 1, ?)",
                (namespace, name, json.dumps(job.to_wire()), "{}", time.time()),
            )
    finally:
        platform.close()


def _names(field: str, bad: str) -> tuple[str, str]:
    return (bad, "victim") if field == "namespace" else ("default", bad)


def _home_listing(home: Home) -> list[str]:
    return sorted(str(p.relative_to(home.path)) for p in home.path.rglob("*"))


@pytest.mark.parametrize("bad", HOSTILE, ids=repr)
@pytest.mark.parametrize("field", FIELDS)
def test_the_local_operator_refuses_a_stored_job_named_outside_its_home(
    home: Home, field: str, bad: str
) -> None:
    namespace, name = _names(field, bad)
    _smuggle(home, namespace, name)
    outside, inside = home.outside_listing(), _home_listing(home)
    platform = LocalPlatform(home.path)
    try:
        with pytest.raises(InvalidSpecError, match=rf"metadata\.{field}"):
            run_job(platform, namespace, name)
        assert platform.leases.get(namespace, name) is None  # not taken: nothing ran
    finally:
        platform.close()
    assert home.outside_listing() == outside
    assert _home_listing(home) == inside  # no token file, no job folder


def test_an_orphaned_stored_job_named_outside_its_home_is_never_started(home: Home) -> None:
    _smuggle(home, "default", "../../../x")
    platform = LocalPlatform(home.path)
    try:
        platform.create_job(local_job("fine", None, "pass", workers=1))
        assert [j.name for j in jobs_without_operator(platform)] == ["fine"]
    finally:
        platform.close()


@pytest.mark.parametrize("uid", ["../../../x", "/abs/x", "a\0b", "u" * 300], ids=repr)
def test_a_job_uid_that_is_no_path_part_is_refused_at_create(home: Home, uid: str) -> None:
    job = local_job("victim", None, "pass", workers=1)
    job.metadata.uid = uid
    platform = LocalPlatform(home.path)
    try:
        with pytest.raises(InvalidSpecError, match=r"metadata\.uid"):
            platform.create_job(job)
        assert platform.list_jobs(None) == []
    finally:
        platform.close()


def _job_with(field: str, bad: str) -> ElasticJob:
    job = ElasticJob.model_validate(
        {
            "metadata": {"name": "victim", "namespace": "default", "uid": "u-1"},
            "spec": {"replicaSpecs": {"worker": {"replicas": 1}}, "dataset": {"size": 8}},
        }
    )
    setattr(job.metadata, field, bad)
    return job


@pytest.mark.parametrize(
    "bad", [h for h in HOSTILE if h != ".."], ids=repr
)  # "master-..": one part
@pytest.mark.parametrize("field", [*FIELDS, "uid"])
def test_a_job_master_path_from_a_name_outside_its_root_is_refused(
    tmp_path: Path, field: str, bad: str
) -> None:
    """What every platform's reconcile meets (a refusal it fails the job by)."""
    job = _job_with(field, bad)
    with pytest.raises(InvalidSpecError, match=rf"metadata\.{field}"):
        with_job_master(job, local_job_master(tmp_path))
    if field != "uid":
        with pytest.raises(InvalidSpecError, match=rf"metadata\.{field}"):
            master_token_file(str(tmp_path), job.namespace, job.name)
