"""``flexjob/core`` holds one sub-package per tenant and three shared modules; nothing else.

A new rule goes into the tenant it belongs to (``flexjob/core/__init__.py`` names them). A new
top-level module in ``core/`` is the shelf this layout replaced: this test fails on one, and a
new tenant is added here and in ``docs/architecture.md`` on purpose.
"""

from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "flexjob" / "core"
TENANTS = {"operator", "training", "ps", "planner", "allocator", "access"}
SHARED_MODULES = {"__init__", "clock", "fields", "replicas"}


def test_core_has_only_its_shared_modules_at_the_top() -> None:
    top = {p.stem for p in CORE.glob("*.py")}
    assert top == SHARED_MODULES, (
        f"new top-level module(s) in flexjob/core: {sorted(top - SHARED_MODULES)}; "
        f"put them in a tenant: {sorted(TENANTS)}"
    )


def test_core_sub_packages_are_the_tenants() -> None:
    packages = {p.name for p in CORE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert packages == TENANTS


def test_every_tenant_is_in_the_architecture_doc() -> None:
    doc = (CORE.parents[1] / "docs" / "architecture.md").read_text()
    missing = [t for t in sorted(TENANTS) if f"core/{t}/" not in doc]
    assert not missing, f"docs/architecture.md does not describe core tenant(s) {missing}"


def test_tests_mirror_the_tenants() -> None:
    tests_core = Path(__file__).resolve().parent / "core"
    stray = sorted(p.name for p in tests_core.glob("test_*.py") if p.stem != "test_fields")
    assert not stray, f"core tests outside a tenant folder: {stray}"
