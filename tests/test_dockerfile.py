"""The Dockerfile of the ``flexjob`` image, checked without a container runtime: parsed by
BuildKit's own parser (the ``dockerfile`` package), it installs exactly what pyproject.toml
declares (torch at the version constraints.txt pins, CPU by default, then the project with
its runtime dependencies), copies only what exists and .dockerignore lets through, and runs as
a numeric non-root user (so the operator Deployment's ``runAsNonRoot`` holds)."""

import fnmatch
import re
import shlex
import tomllib
from pathlib import Path

import dockerfile
import pytest

from flexjob.operator.manifests import InstallConfig, deployment

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def commands() -> tuple[dockerfile.Command, ...]:
    return dockerfile.parse_file(str(ROOT / "Dockerfile"))  # type: ignore[no-any-return]


def args(commands: tuple[dockerfile.Command, ...]) -> dict[str, str]:
    found = {}
    for command in commands:
        if command.cmd == "ARG":
            name, _, default = command.value[0].partition("=")
            found[name] = default
    return found


def expand(text: str, defaults: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: defaults[m.group(1)], text)


def pip_installs(commands: tuple[dockerfile.Command, ...]) -> list[list[str]]:
    """The arguments of every ``pip install`` the image runs (options dropped)."""
    installs = []
    for command in commands:
        if command.cmd != "RUN":
            continue
        for step in " ".join(command.value).split("&&"):
            words = shlex.split(step)
            if words[:2] == ["pip", "install"]:
                rest, kept = words[2:], []
                while rest:
                    word = rest.pop(0)
                    if word == "--index-url":
                        rest.pop(0)
                    elif not word.startswith("-"):
                        kept.append(word)
                installs.append(kept)
    return installs


def test_the_image_installs_pinned_torch_then_the_project_with_its_extras_only(
    commands: tuple[dockerfile.Command, ...],
) -> None:
    defaults = args(commands)
    [torch_pin] = [
        line for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line.startswith("torch")
    ]  # fmt: skip
    installs = [[expand(w, defaults) for w in words] for words in pip_installs(commands)]
    extras = defaults["EXTRAS"].split(",")
    assert installs == [[torch_pin], [f".[{','.join(extras)}]"]]
    assert defaults["TORCH_VARIANT"] == "cpu"


def test_the_image_has_the_extras_every_deployed_component_imports(
    commands: tuple[dockerfile.Command, ...],
) -> None:
    """The operator and allocator need ``kubernetes``, the server ``server``, the brain
    ``brain``; each is an extra pyproject declares."""
    extras = args(commands)["EXTRAS"].split(",")
    declared = PYPROJECT["project"]["optional-dependencies"]
    assert all(extra in declared for extra in extras), extras
    assert {"kubernetes", "server", "brain"} <= set(extras)


def test_the_gpu_variant_is_a_build_argument_of_the_torch_index(
    commands: tuple[dockerfile.Command, ...],
) -> None:
    [run] = [c for c in commands if c.cmd == "RUN" and "torch==" in c.value[0]]
    assert "/whl/${TORCH_VARIANT}" in run.value[0]


def test_the_python_of_the_image_is_one_the_project_supports(
    commands: tuple[dockerfile.Command, ...],
) -> None:
    [base] = [c for c in commands if c.cmd == "FROM"]
    image = expand(base.value[0], args(commands))
    assert image == "python:3.11-slim"
    minimum = PYPROJECT["project"]["requires-python"].removeprefix(">=")
    assert tuple(map(int, image.split(":")[1].split("-")[0].split("."))) >= tuple(
        map(int, minimum.split("."))
    )


def test_the_image_runs_as_a_numeric_non_root_user(
    commands: tuple[dockerfile.Command, ...],
) -> None:
    users = [c.value[0] for c in commands if c.cmd == "USER"]
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0
    security = deployment(InstallConfig())["spec"]["template"]["spec"]["containers"][0]
    assert security["securityContext"]["runAsNonRoot"] is True


def _ignored(path: str, rules: list[str]) -> bool:
    ignored = False
    for rule in rules:
        negated = rule.startswith("!")
        pattern = rule.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(path, pattern) or path.startswith(pattern + "/"):
            ignored = not negated
    return ignored


def test_what_the_image_copies_exists_and_is_not_dockerignored(
    commands: tuple[dockerfile.Command, ...],
) -> None:
    lines = (ROOT / ".dockerignore").read_text().splitlines()
    rules = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    sources = [s for c in commands if c.cmd == "COPY" for s in c.value[:-1]]
    assert sources
    for source in sources:
        assert (ROOT / source).exists(), source
        assert not _ignored(source, rules), source


def test_the_entrypoint_is_the_flexjob_cli(commands: tuple[dockerfile.Command, ...]) -> None:
    [entrypoint] = [c for c in commands if c.cmd == "ENTRYPOINT"]
    assert list(entrypoint.value) == ["python", "-m", "flexjob"]
