"""Hostile names and secrets through the CLI and the local platform: a name that climbs out of
``FLEXJOB_HOME`` (``-n ../../x`` on every command, a job or replica name, ``--job-name``), a job
folder that is a link to elsewhere, a token on a command line, and the services' tokens in the
environment of the processes a local job starts. Each is refused (exit 2 naming the option,
``InvalidSpecError`` naming the field) or kept out, and nothing beside the home changes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flexjob.api import ReplicaType
from flexjob.api.errors import InvalidSpecError
from flexjob.cli.errors import KUBECTL_USAGE_EXIT, USAGE_EXIT
from flexjob.cli.main import app
from flexjob.core.replicas import ReplicaRequest
from flexjob.platform.local import LocalPlatform
from flexjob.platform.local import paths as local_paths
from tests.support.local_jobs import local_job, write_spec

from .conftest import Home, clean_env

ESCAPES = ["../../x", "..", "../x", "a/b", "X_UPPER", ""]


def _books(home: Home) -> tuple[object, ...]:
    platform = LocalPlatform(home.path)
    try:
        jobs = sorted((j.namespace, j.name) for j in platform.list_jobs(None))
    finally:
        platform.close()
    return jobs, home.outside_listing()


def _stored(home: Home) -> None:
    platform = LocalPlatform(home.path)
    try:
        platform.create_job(local_job("victim", None, "pass", workers=1))
    finally:
        platform.close()


CLI_PROBES: dict[str, list[str]] = {
    "submit -n": ["submit", "--detach", "-n", "{bad}", "{spec}"],
    "get -n": ["get", "-n", "{bad}"],
    "get NAME": ["get", "{bad}"],
    "describe -n": ["describe", "victim", "-n", "{bad}"],
    "describe NAME": ["describe", "{bad}"],
    "logs -n": ["logs", "victim", "-n", "{bad}"],
    "logs --replica": ["logs", "victim", "--replica", "{bad}"],
    "scale -n": ["scale", "victim", "-n", "{bad}", "--worker", "2"],
    "delete -n": ["delete", "victim", "-n", "{bad}"],
    "delete NAME": ["delete", "{bad}"],
    "plot -n": ["plot", "victim", "-n", "{bad}"],
    "operator -n": ["operator", "--platform", "local", "-n", "{bad}", "victim"],
    "operator JOB": ["operator", "--platform", "local", "{bad}"],
    "run --rdzv-id": ["run", "--rdzv-id", "{bad}", "--nnodes", "1", "train.py"],
}


#: Every command with a name that climbs out of the home; a few with one that is only not a
#: DNS-1123 label (the same callback checks them all; ``run --rdzv-id`` is a torchrun
#: rendezvous id, any one path part).
#: The kubectl-like commands' usage errors exit 1 as kubectl's do (``cli.errors``); the others 2.
KUBECTL_LIKE = ("submit", "get", "describe", "logs", "scale", "delete")


def usage_exit(command: str) -> int:
    return KUBECTL_USAGE_EXIT if command.split()[0] in KUBECTL_LIKE else USAGE_EXIT


NAME_CASES = [(cmd, "../../x") for cmd in CLI_PROBES] + [
    (cmd, "X_UPPER") for cmd in ("submit -n", "get NAME", "delete -n", "logs --replica")
]


@pytest.mark.parametrize(("command", "bad"), NAME_CASES, ids=[f"{c} {b}" for c, b in NAME_CASES])
def test_a_name_that_is_not_a_name_is_refused_by_every_command(
    home: Home, tmp_path: Path, command: str, bad: str
) -> None:
    argv = CLI_PROBES[command]
    _stored(home)
    spec = write_spec(tmp_path, local_job("victim2", None, "pass", workers=1))
    before = _books(home)
    args = [a.replace("{bad}", bad).replace("{spec}", spec) for a in argv]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == usage_exit(command), result.output
    assert "Invalid value" in result.output and (
        "DNS-1123" in result.output or "path" in result.output
    )
    assert _books(home) == before


@pytest.mark.parametrize("bad", ESCAPES, ids=[repr(b) for b in ESCAPES])
def test_the_local_platform_stores_no_job_whose_name_is_not_a_name(home: Home, bad: str) -> None:
    before = _books(home)
    platform = LocalPlatform(home.path)
    try:
        with pytest.raises(InvalidSpecError, match=r"metadata\.namespace"):
            platform.create_job(local_job("victim", None, "pass", namespace=bad))
        with pytest.raises(InvalidSpecError, match=r"metadata\.name"):
            platform.create_job(local_job(bad or "", None, "pass"))
    finally:
        platform.close()
    assert _books(home) == before


PATH_PARTS = {
    "job folder of namespace '../..'": lambda h: local_paths.job_dir(h, "../..", "x"),
    "job folder of job '..'": lambda h: local_paths.job_dir(h, "default", ".."),
    "log of replica '../../../x'": lambda h: local_paths.log_path(h, "default", "j", "../../../x"),
    "log of replica 'a/b'": lambda h: local_paths.log_path(h, "default", "j", "a/b"),
    "job folder with a NUL": lambda h: local_paths.job_dir(h, "default", "a\0b"),
}


@pytest.mark.parametrize("build", PATH_PARTS.values(), ids=PATH_PARTS.keys())
def test_a_path_built_from_a_name_never_leaves_the_home(home: Home, build: object) -> None:
    with pytest.raises(InvalidSpecError, match=r"^(namespace|job|replica):"):
        build(home.path)  # type: ignore[operator]


def test_deleting_a_job_whose_folder_links_outside_removes_nothing_there(home: Home) -> None:
    _stored(home)
    folder = home.path / "jobs" / "default" / "victim"
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.symlink_to(home.outside / "victim")
    before = home.outside_listing()
    result = CliRunner().invoke(app, ["delete", "victim"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert home.outside_listing() == before


TOKEN_COMMANDS = {
    "server --token": ["server", "--host", "127.0.0.1", "--port", "0", "--token", "hunter2"],
    "brain --token": ["brain", "--db", "sqlite://", "--port", "0", "--token", "hunter2"],
}


@pytest.mark.timeout(60)  # what it did before: serve, with the token in ps for all to see
@pytest.mark.parametrize("argv", TOKEN_COMMANDS.values(), ids=TOKEN_COMMANDS.keys())
def test_a_token_on_a_command_line_is_refused_naming_the_ways_that_work(
    home: Home, argv: list[str]
) -> None:
    result = CliRunner().invoke(app, argv, env=clean_env(FLEXJOB_HOME=str(home.path)))
    assert result.exit_code == 2, result.output
    assert "--token-file" in result.output and "visible" in result.output


def test_a_token_file_that_cannot_be_read_is_refused_by_name(home: Home) -> None:
    missing = home.path / "no-such-token"
    result = CliRunner().invoke(app, ["server", "--host", "0.0.0.0", "--token-file", str(missing)])
    assert result.exit_code == 2
    assert "--token-file" in result.output


SECRETS = {
    "FLEXJOB_SERVER_TOKEN": "server-secret",
    "FLEXJOB_BRAIN_TOKEN": "brain-secret",
    "FLEXJOB_METRICS_TOKEN": "metrics-secret",
    "FLEXJOB_MASTER_TOKEN": "another-jobs-master-secret",
}


def _replica_env(home: Home, monkeypatch: pytest.MonkeyPatch, rtype: ReplicaType) -> str:
    """What a local replica of ``rtype`` sees of the secrets in its submitter's shell."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    out = home.path / f"env-{rtype.value}.txt"
    seen = f"sorted(k for k in os.environ if k in {sorted(SECRETS)!r})"
    code = f"import os; open({str(out)!r}, 'w').write(repr({seen}))"
    template = local_job("envjob", None, "pass").spec.replica_specs[ReplicaType.WORKER].template
    platform = LocalPlatform(home.path)
    try:
        request = ReplicaRequest(
            namespace="default",
            job="envjob",
            type=rtype,
            index=0,
            name=f"envjob-{rtype.value}-0",
            command=(sys.executable, "-c", code),
            args=(),
            env={},
            labels={},
            resources={},
            template=template,
        )
        platform.create_replica(request)
        from tests.support.polling import wait_until

        return wait_until(
            lambda: out.exists() and out.read_text(), timeout=30, what="the replica's env"
        )
    finally:
        platform.close()


def test_a_local_worker_inherits_none_of_the_services_tokens(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _replica_env(home, monkeypatch, ReplicaType.WORKER) == "[]"


def test_a_local_job_master_keeps_only_the_brains_token(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _replica_env(home, monkeypatch, ReplicaType.MASTER) == "['FLEXJOB_BRAIN_TOKEN']"
