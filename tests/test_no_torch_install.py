"""The control plane installs and runs without torch: the wheel built from this checkout,
installed into a fresh venv that has no torch, runs ``flexjob validate``, ``submit`` (the local
operator), ``operator`` (kopf, against the emulator), ``server``, ``brain`` and ``allocator``.

Nothing is downloaded (house rule): the wheel is built without build isolation, and the fresh
venv gets the packages of ``flexjob[kubernetes,server,brain]``'s requirements — exactly those,
found by walking their metadata — from this test environment, linked into a directory of
their own (torch and whatever needs it are not among them); ``pip check`` then proves the
wheel's requirements are met there without torch. One build and one venv for all commands.
"""

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from flexjob.platform.ports import free_port
from tests.operator.test_operator_cli import assert_operator_creates_a_master
from tests.support.k8s_fixtures import EmulatorThread
from tests.support.local_jobs import local_job, write_spec

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("kubernetes", "server", "brain")


def requirement_closure(name: str, extras: tuple[str, ...]) -> set[str]:
    """The installed distributions ``name[extras]`` needs, transitively (by this
    environment's metadata; markers evaluated here)."""
    seen: set[str] = set()
    todo = [(name, set(extras))]
    while todo:
        dist_name, wanted = todo.pop()
        dist = metadata.distribution(dist_name)
        for line in dist.requires or []:
            req = Requirement(line)
            envs = [{"extra": e} for e in wanted] or [{"extra": ""}]
            if req.marker is not None and not any(req.marker.evaluate(e) for e in envs):
                continue
            key = req.name.lower()
            if key == "flexjob":  # flexjob[a,b] in its own extras
                todo.append((dist_name, set(req.extras)))
                continue
            if key not in seen:
                seen.add(key)
                todo.append((req.name, set(req.extras)))
    return seen


def link_distributions(names: set[str], into: Path) -> None:
    """Link each distribution's top-level files (package dirs, modules, dist-info) into
    ``into``."""
    for name in names:
        dist = metadata.distribution(name)
        base = Path(str(dist.locate_file("")))
        for top in {f.parts[0] for f in dist.files or [] if f.parts[0] != ".."}:
            target = into / top
            if not target.exists() and (base / top).exists():
                target.symlink_to(base / top)


def run(cmd: list[str], env: dict[str, str], timeout: float = 120) -> str:
    """Run ``cmd`` away from this checkout (whose ``flexjob/`` would shadow the wheel's)."""
    cwd = env.get("FLEXJOB_HOME", "/")
    os.makedirs(cwd, exist_ok=True)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    assert done.returncode == 0, f"{cmd}:\n{done.stdout}{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """(the venv's python, an environment whose PATH and nothing else lead to it)."""
    tmp = tmp_path_factory.mktemp("no-torch")
    dist = tmp / "dist"
    pip = [sys.executable, "-m", "pip"]
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    build = [*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(ROOT)]
    run(build, {**clean, "FLEXJOB_HOME": str(tmp)}, timeout=180)
    [wheel] = dist.glob("flexjob-*.whl")
    # Without pip of its own (ensurepip costs a minute on a loaded machine): this
    # environment's pip installs into it and checks it (``pip --python``).
    venv_cmd = [sys.base_prefix + "/bin/python3", "-m", "venv", "--without-pip", str(tmp / "venv")]
    subprocess.run(venv_cmd, check=True)
    python = tmp / "venv" / "bin" / "python"
    site = Path(
        run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], clean)
        .strip()
    )  # fmt: skip
    deps = tmp / "deps"
    deps.mkdir()
    needed = requirement_closure("flexjob", EXTRAS)
    assert "torch" not in needed
    link_distributions(needed, deps)
    (site / "deps.pth").write_text(f"{deps}\n")
    run([*pip, "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        clean)  # fmt: skip
    env = {
        **clean,
        "PATH": f"{python.parent}{os.pathsep}{clean.get('PATH', '')}",
        "FLEXJOB_HOME": str(tmp / "home"),
        "FLEXJOB_METRICS_ADDR": "off",
    }
    yield python, env


def test_the_wheels_requirements_hold_in_a_venv_without_torch(
    venv: tuple[Path, dict[str, str]],
) -> None:
    python, env = venv
    out = run([sys.executable, "-m", "pip", "--python", str(python), "check"], env)
    assert "No broken requirements" in out, out
    probe = (
        "import importlib.util, flexjob; print(importlib.util.find_spec('torch'), flexjob.__file__)"
    )
    found, where = run([str(python), "-c", probe], env).split()
    assert found == "None" and "site-packages" in where and str(ROOT) not in where


def test_validate_and_submit_run_without_torch(
    venv: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    python, env = venv
    flexjob = [str(python), "-m", "flexjob"]
    assert "valid" in run(
        [*flexjob, "validate", str(ROOT / "examples/specs/digits-elastic.yaml")], env
    )
    job = local_job("plain", master=None, worker="print('hello')", workers=1)
    out = run([*flexjob, "submit", write_spec(tmp_path, job)], env)
    assert "job default/plain Succeeded" in out, out


def test_the_kopf_operator_runs_without_torch(
    venv: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    python, env = venv
    with EmulatorThread() as emulator:
        assert_operator_creates_a_master(str(python), emulator.base_url, tmp_path, env)


def serves_health(cmd: list[str], env: dict[str, str], url: str, log: Path) -> dict[str, object]:
    """Start ``cmd``, wait for ``url`` to answer, stop it; the answer."""
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    return dict(json.loads(response.read()))
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"{url} did not answer in 60 s:\n{log.read_text()}")
    finally:
        proc.terminate()
        proc.wait(15)


def test_server_brain_and_allocator_run_without_torch(
    venv: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    python, env = venv
    flexjob = [str(python), "-m", "flexjob"]
    port = free_port()
    server = serves_health([*flexjob, "server", "--port", str(port), "--platform", "local"], env,
                           f"http://127.0.0.1:{port}/healthz", tmp_path / "server.log")  # fmt: skip
    assert server.get("status") == "ok", server
    port = free_port()
    db = f"sqlite:///{tmp_path / 'brain.db'}"
    brain = serves_health([*flexjob, "brain", "--db", db, "--port", str(port)], env,
                          f"http://127.0.0.1:{port}/healthz", tmp_path / "brain.log")  # fmt: skip
    assert brain.get("status") == "ok", brain
    run([*flexjob, "allocator", "--platform", "local", "--once", "--node", "1x0"], env)
