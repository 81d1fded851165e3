"""`pip install 'flexjob[torch]'` is enough for `flexjob run`: with every other optional
extra's modules made unimportable (in this process's children too), a run of a plain torch
script works. The extras in pyproject.toml are the ones blocked here (torch aside: without it
there is no training; tests/test_no_torch_install.py runs the control plane without it)."""

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Import names of what the torch, kubernetes, server, brain, plot, examples and gpu extras install.
EXTRA_MODULES = {
    "torch": "torch",
    "kubernetes": "kubernetes",
    "kopf": "kopf",
    "fastapi": "fastapi",
    "uvicorn": "uvicorn",
    "sqlalchemy": "sqlalchemy",
    "alembic": "alembic",
    "psycopg": "psycopg",
    "scikit-learn": "sklearn",
    "gymnasium": "gymnasium",
    "nvidia-ml-py": "pynvml",
    "httpx": "httpx",
    "matplotlib": "matplotlib",
}
#: The extras `flexjob run` needs (only torch): not blocked.
RUN_MODULES = {"torch"}
#: Makes the extras look not installed: the path finder misses them, so ``import kopf`` raises
#: ModuleNotFoundError and ``importlib.util.find_spec("sklearn")`` is None, as on a machine
#: without them (torch._dynamo probes optional modules with find_spec).
BLOCKER = """
from importlib.machinery import PathFinder
BLOCKED = {blocked!r}
_find = PathFinder.find_spec
def _find_unless_blocked(cls, name, path=None, target=None):
    if name.split(".")[0] in BLOCKED:
        return None
    return _find(name, path, target)
PathFinder.find_spec = classmethod(_find_unless_blocked)
"""


def extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project["optional-dependencies"]  # type: ignore[no-any-return]


def dist_name(requirement: str) -> str:
    name = requirement.split(";")[0]
    for sep in "[<>=!~ ":
        name = name.split(sep)[0]
    return name.lower()


def test_every_extra_dependency_is_blocked_here_and_none_is_in_the_base() -> None:
    listed = {dist_name(r) for k, reqs in extras().items() if k != "test" for r in reqs}
    assert listed == set(EXTRA_MODULES)
    base = {
        dist_name(r)
        for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    assert not base & listed and "aiohttp" not in base and "scikit-learn" not in base


@pytest.mark.e2e
@pytest.mark.timeout(120)
def test_flexjob_run_needs_no_extra(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    blocked = (set(EXTRA_MODULES.values()) - RUN_MODULES) | {"aiohttp", "starlette"}
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=sorted(blocked)))
    env = {**os.environ, "PYTHONPATH": str(site)}
    probe = subprocess.run(
        [sys.executable, "-c", "import kopf"], env=env, capture_output=True, text=True
    )
    assert "No module named 'kopf'" in probe.stderr  # the block reaches child interpreters
    script = ROOT / "tests" / "agent" / "plain_allreduce.py"
    cmd = [sys.executable, "-m", "flexjob", "run", "--nnodes", "1", "--no-progress",
           "--job-dir", str(tmp_path / "job"), str(script)]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=100, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sum=1 world=1" in done.stdout, done.stdout + done.stderr
