import pytest

from flexjob.core.allocator import GoodputPolicy, StaticPolicy
from flexjob.core.allocator.fair_goodput import FairGoodputPolicy
from flexjob.scheduler.registry import (
    UnknownPolicyError,
    available_policies,
    load_policy,
    load_policy_for,
)


def test_builtin_policies_load_by_name() -> None:
    assert isinstance(load_policy("static"), StaticPolicy)
    assert load_policy("goodput", restart_delay=5.0).restart_delay == 5.0  # type: ignore[attr-defined]


def test_load_policy_for_passes_only_the_settings_a_policy_takes() -> None:
    goodput = load_policy_for("goodput", restart_delay=5.0)
    assert isinstance(goodput, FairGoodputPolicy) and goodput.restart_delay == 5.0
    assert isinstance(load_policy_for("static", restart_delay=5.0), StaticPolicy)


def test_policy_loads_from_a_module_and_class_path() -> None:
    assert isinstance(load_policy("flexjob.core.allocator.goodput:GoodputPolicy"), GoodputPolicy)


def test_unknown_policy_error_lists_the_available_ones() -> None:
    with pytest.raises(UnknownPolicyError, match=r"available: .*goodput.*pack.*static"):
        load_policy("fastest")


def test_a_class_that_is_not_a_policy_is_refused() -> None:
    with pytest.raises(UnknownPolicyError, match="is not a policy"):
        load_policy("collections:OrderedDict")


def test_available_policies_include_the_builtins() -> None:
    assert {"static", "pack", "goodput"} <= set(available_policies())


class _EntryPoint:
    name = "mine"

    def load(self) -> type:
        return StaticPolicy


def test_a_policy_registered_as_an_entry_point_loads_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from flexjob.scheduler import registry

    monkeypatch.setattr(registry, "entry_points", lambda group: [_EntryPoint()])
    assert isinstance(load_policy("mine"), StaticPolicy)
    assert "mine" in available_policies()
