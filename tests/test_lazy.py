"""flexjob.lazy: a package's names load from their submodules on first use."""

import subprocess
import sys

import pytest

from flexjob.lazy import lazy_exports


def test_importing_a_constant_does_not_load_the_job_models() -> None:
    probe = (
        "import sys\n"
        "from flexjob.api import names, ReplicaType\n"
        "print('flexjob.api.job' in sys.modules, 'pydantic' in sys.modules)\n"
        "from flexjob.api import ElasticJob\n"
        "print(ElasticJob.__module__, 'ElasticJob' in dir(sys.modules['flexjob.api']))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "flexjob.api.job", "True"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    import flexjob.api

    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        _ = flexjob.api.Nope
    with pytest.raises(ImportError):
        from flexjob.api import Nope  # noqa: F401


def test_a_name_spelled_like_a_submodule_is_refused() -> None:
    with pytest.raises(ValueError, match=r"\['optimize'\] name both an export and a submodule"):
        lazy_exports("flexjob.core.planner", {"optimize": "optimize"})
