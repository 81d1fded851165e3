"""The trainer's settings: one table of variables, one reader, the doc showing the same table."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from flexjob.api import names
from flexjob.trainer import world
from flexjob.trainer.settings import TrainerSettings, markdown_table, table

ROOT = Path(__file__).resolve().parents[2]
ENV = {row.field: row.name for row in table()}


def test_every_variable_is_named_once_in_api_names() -> None:
    owned = {v for k, v in vars(names).items() if k.startswith("ENV_")}
    listed = [row.name for row in table()]
    assert len(set(listed)) == len(listed)
    assert set(listed) <= owned, sorted(set(listed) - owned)


def test_the_architecture_doc_shows_the_table() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text()
    assert markdown_table() in doc, (
        "regenerate: python -c 'from flexjob.trainer.settings import *; print(markdown_table())'"
    )


def _environment_reads(path: Path) -> list[str]:
    """Where ``path`` reads ``os.environ`` or ``os.getenv`` (writes — ``update``,
    ``setdefault`` — are the trainer telling torch its world)."""
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    reads = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
            continue
        if node.value.id != "os" or node.attr not in ("environ", "getenv"):
            continue
        use = parents.get(node)
        if isinstance(use, ast.Attribute) and use.attr in ("update", "setdefault"):
            continue
        reads.append(f"{path.name}:{node.lineno}")
    return reads


def test_only_the_settings_module_reads_the_environment() -> None:
    modules = sorted((ROOT / "flexjob" / "trainer").rglob("*.py"))
    reads = [r for p in modules if p.name != "settings.py" for r in _environment_reads(p)]
    assert not reads, reads
    assert _environment_reads(ROOT / "flexjob" / "trainer" / "settings.py")  # the check sees one


def test_unset_and_empty_variables_take_the_rows_defaults() -> None:
    assert TrainerSettings.from_env({}) == TrainerSettings()
    assert TrainerSettings.from_env({row.name: "" for row in table()}) == TrainerSettings()


def test_each_variable_fills_its_field() -> None:
    env = {
        ENV["node_rank"]: "2",
        ENV["collective_timeout_s"]: "7.5",
        ENV["preflight"]: "1",
        ENV["checkpoint_dir"]: "/ckpt",
    }
    s = TrainerSettings.from_env(env)
    assert (s.node_rank, s.collective_timeout_s, s.preflight, s.checkpoint_dir) == (
        2,
        7.5,
        True,
        "/ckpt",
    )
    assert not TrainerSettings.from_env({ENV["preflight"]: "yes"}).preflight  # only 1 is on


@pytest.mark.parametrize(
    ("field", "raw", "kind"),
    [("node_rank", "two", "an integer"), ("collective_timeout_s", "soon", "a number")],
)
def test_a_bad_number_names_the_variable(field: str, raw: str, kind: str) -> None:
    with pytest.raises(ValueError, match=f"{ENV[field]}='{raw}' is not {kind}"):
        TrainerSettings.from_env({ENV[field]: raw})


def test_the_process_settings_are_parsed_once_while_the_environment_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(names.ENV_CHECKPOINT_DIR, "/first")
    first = TrainerSettings.current()
    assert first.checkpoint_dir == "/first" and TrainerSettings.current() is first
    monkeypatch.setenv(names.ENV_CHECKPOINT_DIR, "/second")
    assert TrainerSettings.current().checkpoint_dir == "/second"


def test_a_helper_given_settings_follows_them_not_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(names.ENV_NODE_ID, "from-env")
    given = TrainerSettings.from_env({names.ENV_NODE_ID: "given", names.ENV_LOCAL_RANK: "1"})
    ident = world.node_identity(given)
    assert (ident.node_id, ident.local_rank) == ("given", 1)
    assert world.node_identity().node_id == "from-env"
