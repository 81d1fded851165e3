"""No class name is defined twice in ``flexjob/``: one owner per concept (issue 11).

A wire twin of a domain type is named for it with a ``Message`` suffix, a database row with
``Row``; generated protobuf code (``rpc/gen``) is left out. A second class of the same name
fails here with both places named.
"""

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "flexjob"
GENERATED = ROOT / "rpc" / "gen"


def class_definitions() -> dict[str, list[str]]:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(ROOT.rglob("*.py")):
        if GENERATED in path.parents:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(f"{path.relative_to(ROOT.parent)}:{node.lineno}")
    return where


def test_every_class_name_is_defined_once() -> None:
    twice = {name: places for name, places in class_definitions().items() if len(places) > 1}
    assert not twice, twice
