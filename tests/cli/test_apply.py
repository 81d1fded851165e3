"""``flexjob apply FILE`` stores DI's AggregatorConfig on the local platform (created, then
configured), refuses other kinds and bad fields naming them, and the stored object is what
the platform lists."""

import subprocess
import sys
from pathlib import Path

from flexjob.platform.local import LocalPlatform

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "di_cartpole" / "aggregator-config.yaml"


def apply(home: Path, file: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "flexjob", "apply", str(file)]
    env = {"FLEXJOB_HOME": str(home), "PATH": "/usr/bin:/bin"}
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


def test_apply_stores_an_aggregator_config_and_replaces_it(tmp_path: Path) -> None:
    first = apply(tmp_path, EXAMPLE)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "aggregatorconfig/aggregator-config created"
    again = apply(tmp_path, EXAMPLE)
    assert again.stdout.strip() == "aggregatorconfig/aggregator-config configured"
    platform = LocalPlatform(tmp_path)
    [stored] = platform.list_cluster_objects("AggregatorConfig")
    assert stored["metadata"]["name"] == "aggregator-config"
    command = stored["spec"]["aggregator"]["template"]["spec"]["containers"][0]["command"]
    assert command == ["python", "examples/di_cartpole/aggregator.py"]
    platform.delete_cluster_object("AggregatorConfig", "aggregator-config")
    assert platform.list_cluster_objects("AggregatorConfig") == []


def test_apply_refuses_other_kinds_and_bad_fields_naming_each(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: diengine.opendilab.org/v1alpha1\nkind: AggregatorConfig\n"
        "metadata: {name: a}\nspec: {aggregator: {template: 3}}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"
    )
    done = apply(tmp_path / "home", bad)
    assert done.returncode == 1
    assert "documents[0].spec.aggregator.template:" in done.stderr
    assert "documents[1].kind: flexjob apply takes jobs and AggregatorConfig" in done.stderr
    assert LocalPlatform(tmp_path / "home").list_cluster_objects("AggregatorConfig") == []
