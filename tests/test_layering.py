"""Each package imports only from the packages above it (README's layout; the layers of
docs/architecture.md).

The trainer sits above the agent: the agent launches trainer processes and reads what they
publish (``trainer.world``, ``trainer.status``), while the trainer never imports the agent.
"""

import ast
from pathlib import Path

import pytest

LAYERS = (
    "api",
    "core",
    "observe",
    "rpc",
    "platform",
    "master",
    "ps",
    "trainer",
    "agent",
    "runner",
    "operator",
    "server",
    "scheduler",
    "brain",
    "client",
    "cli",
)
ROOT = Path(__file__).resolve().parents[1] / "flexjob"


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n.split(".")[1] for n in names if n.startswith("flexjob.") and n.count(".") >= 1}


@pytest.mark.parametrize("layer", LAYERS)
def test_package_imports_only_layers_above_it(layer: str) -> None:
    allowed = set(LAYERS[: LAYERS.index(layer) + 1])
    wrong = {
        f"{path.relative_to(ROOT.parent)} imports flexjob.{pkg}"
        for path in (ROOT / layer).rglob("*.py")
        for pkg in imported_packages(path)
        if pkg in LAYERS and pkg not in allowed
    }
    assert not wrong, sorted(wrong)


#: Packages that never import the one named although the layers would allow it: the brain
#: and the HTTP server share their bearer auth and request guards through ``rpc``
#: (``http_auth.py``, ``http_guards.py``), not one through the other.
APART = {"brain": "server"}


@pytest.mark.parametrize("layer", sorted(APART))
def test_package_does_not_import_its_peer(layer: str) -> None:
    wrong = {
        f"{path.relative_to(ROOT.parent)} imports flexjob.{APART[layer]}"
        for path in (ROOT / layer).rglob("*.py")
        if APART[layer] in imported_packages(path)
    }
    assert not wrong, sorted(wrong)
