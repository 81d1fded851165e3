"""No code outside ``flexjob/api/`` names a particular role: it asks the role table.

``api/roles.py`` owns what each replica type does (``ROLE_TRAITS``) and answers the questions
the rest of the code asks (the job's training type, the type that runs the master, the PS, the
token holders, DI's fields...). A new role is then one row there, not a hunt through the
planner, the server and the operator. This test scans every module outside ``flexjob/api/``
(its AST, so comments and docstrings do not count) for ``ReplicaType.<MEMBER>`` and for a
string that is a role's wire value (``"worker"``, ``"ps"``, ...), and fails on any site not in
``ALLOWED``; an ``ALLOWED`` site that is gone fails too, so the list only shrinks.
"""

import ast
from functools import cache
from pathlib import Path

from flexjob.api import ReplicaType

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "flexjob"
#: Where roles may be named: the job model and its role table (and generated protobuf code).
EXEMPT = (PACKAGE / "api", PACKAGE / "rpc" / "gen")
ROLE_VALUES = frozenset(t.value for t in ReplicaType)
#: Sites that may still name a role, (file name, what) → why: none since issue 32. By file
#: name, not path.
ALLOWED: dict[tuple[str, str], str] = {}


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring constants of ``tree``'s module, classes and functions."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def role_sites(path: Path) -> list[tuple[int, str]]:
    """``(line, what)`` for each place ``path`` names a particular role."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docs = _docstrings(tree)
    sites = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ReplicaType.__members__
            and isinstance(node.value, ast.Name | ast.Attribute)
            and (getattr(node.value, "id", None) or getattr(node.value, "attr", None))
            == "ReplicaType"
        ):
            sites.append((node.lineno, f"ReplicaType.{node.attr}"))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in ROLE_VALUES
            and id(node) not in docs
        ):
            sites.append((node.lineno, repr(node.value)))
    return sites


@cache
def all_sites(root: Path = PACKAGE) -> dict[tuple[str, str], list[int]]:
    """Every role-naming site under ``root`` outside the exempt folders, by (path, what);
    scanned once per run."""
    out: dict[tuple[str, str], list[int]] = {}
    for path in sorted(root.rglob("*.py")):
        if any(path.is_relative_to(e) for e in EXEMPT):
            continue
        rel = path.relative_to(ROOT).as_posix()
        for line, what in role_sites(path):
            out.setdefault((rel, what), []).append(line)
    return out


def test_no_code_outside_api_names_a_particular_role() -> None:
    found = all_sites()
    named = [
        f"{path}:{line}: {what} (ask api.roles: MASTER_TYPE, PS_TYPE, job_training_type, ...)"
        for (path, what), lines in found.items()
        if (Path(path).name, what) not in ALLOWED
        for line in lines
    ]
    assert named == [], "\n".join(named)


def test_every_allowed_site_still_exists_and_there_are_at_most_two() -> None:
    found = all_sites()
    assert len(ALLOWED) <= 2
    seen = {(Path(path).name, what) for path, what in found}
    gone = [f"{name}: {what}" for name, what in ALLOWED if (name, what) not in seen]
    assert gone == [], "remove these from ALLOWED: the role is no longer named there"


def test_the_scan_sees_a_member_and_a_role_string_but_not_a_docstring(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text(
        '"""About the "worker" role."""\n'
        "from flexjob.api import ReplicaType\n"
        "KIND = ReplicaType.WORKER\n"
        'DEFAULT = "ps"\n'
        'OTHER = "workers"\n'
    )
    assert role_sites(module) == [(3, "ReplicaType.WORKER"), (4, "'ps'")]
