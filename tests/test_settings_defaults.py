"""Every setting's default is written once: in its settings dataclass (the master's tree in
``core.training.master_config``, ``AgentConfig``, ``RunConfig``; ``runner.config.RUN_MASTER`` the
one
place where a run's master differs). Elsewhere a setting's default is read, never typed again.

Two rules, by the setting's name (the dataclass field), over ``flexjob/``:

* no function parameter and no dataclass field outside the class that owns a setting has a
  literal default under its name (``heartbeat_timeout: float = 10.0`` in a second config);
* no CLI option for a setting has a literal default: a ``typer.Option(3, "--max-restarts")``
  or ``master_flag("heartbeat_timeout", 10.0)``, or a default typed into its help
  (``show_default="30"``, ``"... [300]."``).
"""

import ast
import re
from dataclasses import MISSING, fields, is_dataclass
from pathlib import Path
from typing import Any

from flexjob.agent.config import AgentConfig
from flexjob.core.training.master_config import MasterConfig
from flexjob.runner.config import RunConfig

ROOT = Path(__file__).resolve().parents[1] / "flexjob"
#: Field names too general to mean one setting wherever they appear.
GENERAL = {"port", "workers", "interval", "ratio", "num_ps", "min_nodes", "max_nodes"}
BRACKETED_NUMBER = re.compile(r"\[\d+(\.\d+)?\]")
#: Same name, another setting: where and why.
OTHERS = {
    "flexjob/ps/main.py field PsConfig.checkpoint_interval": "a PS's own checkpoints",
    "flexjob/agent/spare.py field SpareConfig.nproc_per_node": "the workers a spare holds",
    "flexjob/rpc/messages.py field NodeRef.replica_index": "the wire message's",
    "flexjob/rpc/server.py parameter shard_streams": "the transport's: none unless asked",
    "flexjob/rpc/aio_server.py parameter shard_streams": "the transport's: none unless asked",
}


def _settings_classes() -> list[type]:
    master = MasterConfig()
    groups = [type(getattr(master, f.name)) for f in fields(master)]
    return [MasterConfig, AgentConfig, RunConfig, *(g for g in groups if is_dataclass(g))]


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def settings_with_defaults() -> dict[str, str]:
    """A setting's name → the class that owns its default (numeric defaults only)."""
    owned: dict[str, str] = {}
    for cls in _settings_classes():
        for f in fields(cls):
            if f.default is not MISSING and _numeric(f.default) and f.name not in GENERAL:
                owned[f.name] = cls.__name__
    return owned


SETTINGS = settings_with_defaults()


def _literal(node: ast.expr | None) -> bool:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and _numeric(node.value)


def _flag_setting(call: ast.Call) -> str | None:
    """The setting a ``typer.Option(default, "--flag", ...)`` is for, by its flags."""
    for arg in call.args[1:]:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            name = arg.value.lstrip("-").replace("-", "_")
            if name in SETTINGS:
                return name
    return None


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def second_defaults(path: Path) -> list[tuple[str, int]]:
    """Where ``path`` writes a setting's default again: (what, line)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    where = f"{path.relative_to(ROOT.parent)}"
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            pairs = list(
                zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
            )
            pairs += [
                (a, d)
                for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                if d is not None
            ]
            found += [
                (f"{where} parameter {a.arg}", d.lineno)
                for a, d in pairs
                if a.arg in SETTINGS and _literal(d)
            ]
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if (
                    isinstance(item, ast.AnnAssign)
                    and isinstance(item.target, ast.Name)
                    and SETTINGS.get(item.target.id, node.name) != node.name
                    and _literal(item.value)
                ):
                    found.append((f"{where} field {node.name}.{item.target.id}", item.lineno))
        elif isinstance(node, ast.Call):
            name = _call_name(node)
            if name == "Option" and node.args and _literal(node.args[0]) and _flag_setting(node):
                found.append((f"{where} option for {_flag_setting(node)}", node.lineno))
            if name == "master_flag" and len(node.args) > 1 and _literal(node.args[1]):
                found.append((f"{where} master_flag default", node.lineno))
            for kw in node.keywords:
                text = kw.value.value if isinstance(kw.value, ast.Constant) else None
                if not isinstance(text, str):
                    continue
                if kw.arg == "show_default" and re.fullmatch(r"\d+(\.\d+)?", text):
                    found.append((f"{where} show_default={text!r}", node.lineno))
                if kw.arg == "help" and name == "Option" and BRACKETED_NUMBER.search(text):
                    found.append((f"{where} a default in the help: {text!r}", node.lineno))
    return [(what, line) for what, line in found if what not in OTHERS]


def test_the_settings_have_defaults_to_guard() -> None:
    assert {"heartbeat_timeout", "last_call_timeout", "max_restarts", "hang_timeout"} <= set(
        SETTINGS
    )


def test_a_settings_default_is_written_once() -> None:
    found = [
        f"{what} (line {line})"
        for p in sorted(ROOT.rglob("*.py"))
        for what, line in second_defaults(p)
    ]
    assert not found, found
