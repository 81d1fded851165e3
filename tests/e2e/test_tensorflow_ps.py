"""TensorFlow parameter-server jobs through ``flexjob submit`` with real TensorFlow
(``tensorflow-cpu``, the ``test`` extra): a Kubeflow TFJob and an ElasticJob whose replicas
run ``tests/e2e/scripts/tf_ps_train.py`` (``TFConfigClusterResolver``, ``tf.distribute.Server``,
a ``ParameterServerStrategy`` coordinator in the chief) form their cluster from the
``TF_CONFIG`` flexjob gives them (``core.operator.tf_cluster``) and train ``y = 3x - 2`` to a
loss under ``LOSS_GOAL``. The TFJob survives a SIGKILLed ps: flexjob relaunches it on the same
address, the chief's coordinator fails on the lost ps and is relaunched, restores its checkpoint
and finishes. The ElasticJob goes from 1 to 2 ps mid-training (``flexjob scale --ps 2``): every
member is restarted with a ``TF_CONFIG`` that lists both, and the chief resumes from its
checkpoint. Before, nothing set ``TF_CONFIG`` and TensorFlow could not form its cluster."""

import importlib.util
import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from flexjob.api import names
from flexjob.api.errors import NotFoundError
from flexjob.platform.local import LocalPlatform
from tests.support.local_jobs import run_flexjob
from tests.support.manifests import manifest
from tests.support.polling import wait_until

#: The marks of a TensorFlow job test (``test_kubernetes_tensorflow.py`` too).
TENSORFLOW_JOB = [
    pytest.mark.e2e,
    pytest.mark.timeout(420),
    pytest.mark.skipif(
        importlib.util.find_spec("tensorflow") is None,
        reason="tensorflow is not installed (the `test` extra installs tensorflow-cpu)",
    ),
]
pytestmark = TENSORFLOW_JOB
REPO = Path(__file__).resolve().parents[2]
SCRIPT = "tests/e2e/scripts/tf_ps_train.py"
FINAL = re.compile(r"final loss=([0-9.e+-]+) w=([0-9.-]+) b=([0-9.-]+)")
#: The fit of y = 3x - 2 ends near 1e-7 (6 epochs of 20 steps at learning rate 0.1).
LOSS_GOAL = 1e-3


@pytest.fixture
def env(home: Path, tmp_path: Path) -> dict[str, str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    pause = str(tmp_path / "pause")
    return {
        **os.environ,
        "FLEXJOB_HOME": str(home),
        "PATH": path,
        "PYTHONPATH": pythonpath,
        "TF_PS_PAUSE": pause,
    }


def flexjob(env: dict[str, str], *args: str, timeout: float = 60) -> str:
    out = run_flexjob(env, *args, timeout=timeout, cwd=REPO)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def template(ckpt: Path) -> dict[str, object]:
    container = {"name": "tensorflow", "image": "tf:cpu", "command": ["python", SCRIPT, str(ckpt)]}
    return {"spec": {"containers": [container]}}


def phase(home: Path, name: str) -> str:
    job = LocalPlatform(home).get_job("default", name)
    return job.status.phase.value if job.status else ""


def logs(home: Path, name: str, replica: str) -> str:
    """The replica's log, every run of it; empty before it has one."""
    try:
        return "".join(LocalPlatform(home).read_logs("default", f"{name}-{replica}"))
    except NotFoundError:
        return ""


def tf_config(log: str) -> dict[str, object]:
    """The last ``TF_CONFIG`` a replica's log printed."""
    lines = [line for line in log.splitlines() if line.startswith("TF_CONFIG=")]
    assert lines, log
    return dict(json.loads(lines[-1].removeprefix("TF_CONFIG=")))


def tf_process(job: str, rtype: str, index: int) -> psutil.Process | None:
    """The training script's process of replica ``index`` of ``rtype`` in ``job``."""
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if SCRIPT not in " ".join(proc.info["cmdline"] or ()):
                continue
            env = proc.environ()
            keys = (names.ENV_JOB_NAME, names.ENV_REPLICA_TYPE, names.ENV_REPLICA_INDEX)
            if tuple(env.get(k) for k in keys) == (job, rtype, str(index)):
                return proc
        except psutil.Error:
            continue
    return None


def run_paused(
    env: dict[str, str], home: Path, tmp_path: Path, name: str, wire: dict[str, object], act
) -> float:
    """Submit ``wire``, let the chief train one epoch, run ``act`` while it waits, let it go on
    and wait for the end; the seconds from submit to the end."""
    pause = Path(env["TF_PS_PAUSE"])
    pause.touch()
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(wire))
    start = time.monotonic()
    flexjob(env, "submit", "--detach", str(spec))
    wait_until(
        lambda: "epoch=1 " in logs(home, name, "chief-0"),
        timeout=240,
        interval=0.5,
        what="the chief's first epoch",
    )
    act()
    pause.unlink()
    wait_until(
        lambda: phase(home, name) in ("Succeeded", "Failed"),
        timeout=300,
        interval=0.5,
        what=f"{name} to finish",
    )
    return time.monotonic() - start


def final_loss(log: str) -> float:
    found = FINAL.findall(log)
    assert found, log
    loss, w, b = (float(v) for v in found[-1])
    assert loss < LOSS_GOAL and abs(w - 3) < 0.05 and abs(b + 2) < 0.05, log
    return loss


def test_a_tfjob_trains_to_its_loss_and_survives_a_killed_ps(
    env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    name = "tf-ps"
    ckpt = tmp_path / "ckpt"
    replicas = {
        kind: {"replicas": n, "restartPolicy": "OnFailure", "template": template(ckpt)}
        for kind, n in (("Chief", 1), ("Worker", 2), ("PS", 1))
    }
    wire = manifest("TFJob", name, {"tfReplicaSpecs": replicas}, api_version="kubeflow.org/v1")

    def kill_ps() -> None:
        victim = wait_until(lambda: tf_process(name, "ps", 0), timeout=10, what="ps-0")
        victim.send_signal(signal.SIGKILL)

    took = run_paused(env, home, tmp_path, name, wire, kill_ps)
    chief = logs(home, name, "chief-0")
    assert phase(home, name) == "Succeeded", chief
    loss = final_loss(chief)
    assert "restored epoch=" in chief, chief  # relaunched after the ps died, from its checkpoint
    config = tf_config(logs(home, name, "worker-1"))
    cluster = config["cluster"]
    assert isinstance(cluster, dict) and sorted(cluster) == ["chief", "ps", "worker"]
    assert [len(cluster[k]) for k in ("chief", "worker", "ps")] == [1, 2, 1]
    assert all(a.startswith("127.0.0.1:") for v in cluster.values() for a in v)
    assert config["task"] == {"type": "worker", "index": 1}
    assert tf_config(logs(home, name, "ps-0"))["cluster"] == cluster  # the same address again
    print(f"tfjob: loss={loss:.3g} seconds={took:.1f}")


def test_an_elasticjob_goes_from_one_to_two_ps_and_every_member_is_told(
    env: dict[str, str], home: Path, tmp_path: Path
) -> None:
    """flexjob's own ElasticJob (DLRover's has the same replicaSpecs, but declares no
    maxReplicas, so its PS count cannot grow past the spec's): ``flexjob scale --ps 2``."""
    name = "tf-elastic"
    ckpt = tmp_path / "ckpt"
    replicas: dict[str, dict[str, object]] = {
        kind: {"replicas": n, "restartPolicy": "OnFailure", "template": template(ckpt)}
        for kind, n in (("chief", 1), ("worker", 1), ("ps", 1))
    }
    replicas["ps"]["maxReplicas"] = 2
    spec = {"distributionStrategy": "ParameterServerStrategy", "replicaSpecs": replicas}
    wire = manifest("ElasticJob", name, spec)

    def ps_listed(replica: str) -> int:
        log = logs(home, name, replica)
        return len(tf_config(log)["cluster"].get("ps", [])) if "TF_CONFIG=" in log else 0

    def two_ps() -> None:
        flexjob(env, "scale", name, "--ps", "2")
        wait_until(
            lambda: ps_listed("chief-0") == 2,
            timeout=120,
            interval=0.5,
            what="the chief restarted with 2 ps",
        )

    took = run_paused(env, home, tmp_path, name, wire, two_ps)
    chief = logs(home, name, "chief-0")
    assert phase(home, name) == "Succeeded", chief
    loss = final_loss(chief)
    assert "restored epoch=" in chief, chief
    for replica in ("worker-0", "ps-0", "ps-1"):
        assert ps_listed(replica) == 2, logs(home, name, replica)
    print(f"elasticjob 1->2 ps: loss={loss:.3g} seconds={took:.1f}")
