"""A TensorFlow parameter-server job on the Kubernetes path with real TensorFlow: the kopf
operator gives each chief / worker / ps pod a Service and ``TF_CONFIG`` naming the others by
their Service addresses (``<pod>.default.svc:<port>``; the process kubelet makes those names
local), the chief's ``ParameterServerStrategy`` coordinator trains ``y = 3x - 2`` to the loss
goal of ``tests/e2e/test_tensorflow_ps.py``, and the job survives its ps pod SIGKILLed after
the first epoch (relaunched behind the same Service; the chief fails on it, is relaunched and
restores its checkpoint)."""

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from flexjob.api import names
from flexjob.platform.ports import free_port
from tests.e2e.k8s_cluster import cluster
from tests.e2e.test_tensorflow_ps import SCRIPT, TENSORFLOW_JOB, final_loss, tf_config
from tests.support.k8s_emulator import wait_for
from tests.support.k8s_fixtures import REPO
from tests.support.manifests import manifest

pytestmark = TENSORFLOW_JOB
NAME = "tf-k8s"
TYPES = ("chief", "worker", "ps")


def free_ports() -> dict[str, int]:
    """Every pod of the process kubelet shares this machine's ports (TensorFlow's server
    listens on all addresses): one free port per type, declared by its container, so its
    Service's too."""
    ports: set[int] = set()
    while len(ports) < len(TYPES):
        ports.add(free_port())
    return dict(zip(TYPES, sorted(ports), strict=True))


def context(c: Any) -> str:
    """Each pod's phase and the end of its log, for a failure's message."""
    out = []
    for pod in c.pods(NAME):
        name = pod["metadata"]["name"]
        phase = (pod.get("status") or {}).get("phase")
        out.append(f"--- {name} {phase}\n{c.log(name)[-1500:]}")
    return "\n".join(out)


def body(ckpt: Path, pause: Path, ports: dict[str, int]) -> dict[str, Any]:
    def replica(rtype: str) -> dict[str, Any]:
        container = {
            "name": "tensorflow",
            "image": "flexjob:latest",
            "command": ["python", SCRIPT, str(ckpt)],
            "ports": [{"containerPort": ports[rtype], "name": "tf"}],
        }
        return {
            "replicas": 1,
            "restartPolicy": "OnFailure",
            "template": {"spec": {"containers": [container]}},
        }

    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    spec = {
        "distributionStrategy": "ParameterServerStrategy",
        "envs": {"TF_PS_PAUSE": str(pause), "PYTHONPATH": pythonpath},
        "replicaSpecs": {t: replica(t) for t in TYPES},
    }
    return manifest("ElasticJob", NAME, spec)


async def test_a_tensorflow_ps_job_on_kubernetes_trains_and_survives_a_killed_ps_pod(
    tmp_path: Path,
) -> None:
    pause = tmp_path / "pause"
    pause.touch()
    ports = free_ports()
    async with cluster(tmp_path / "cluster") as c:
        start = time.monotonic()
        await c.apply_job(body(tmp_path / "ckpt", pause, ports))
        chief = f"{NAME}-chief-0"
        try:
            await wait_for(lambda: "epoch=1 " in c.log(chief), 240, 0.5)
        except TimeoutError:
            pytest.fail(f"no first epoch in 240 s\n{context(c)}")
        first_epoch = time.monotonic() - start
        pods = {p["metadata"]["name"]: p for p in c.pods(NAME)}
        envs = {
            n: {e["name"]: e.get("value") for e in p["spec"]["containers"][0].get("env", [])}
            for n, p in pods.items()
        }
        cluster_spec = {t: [f"{NAME}-{t}-0.default.svc:{port}"] for t, port in ports.items()}
        for rtype in TYPES:
            config = json.loads(envs[f"{NAME}-{rtype}-0"][names.ENV_TF_CONFIG])
            assert config == {"cluster": cluster_spec, "task": {"type": rtype, "index": 0}}
        services = {
            s["metadata"]["name"]: s
            for s in c.emulator.store.select(
                c.emulator.kind("", "v1", "services"), "default", f"{names.LABEL_JOB_NAME}={NAME}"
            )
        }
        for rtype, port in ports.items():
            svc = services[f"{NAME}-{rtype}-0"]
            assert [p["port"] for p in svc["spec"]["ports"]] == [port]
        # the pods' own view: the kubelet made the Service names local loopback addresses
        seen = tf_config(c.log(f"{NAME}-worker-0"))["cluster"]
        assert isinstance(seen, dict) and all(
            a.startswith("127.") for v in seen.values() for a in v
        )
        c.kill(f"{NAME}-ps-0")
        killed = time.monotonic()
        pause.unlink()
        try:
            phase = await c.wait_phase(NAME, ("Succeeded", "Failed"), 300)
        except TimeoutError:
            pytest.fail(f"not finished 300 s after the ps pod was killed\n{context(c)}")
        took, recovered = time.monotonic() - start, time.monotonic() - killed
        log = c.log(chief)
        assert phase == "Succeeded", context(c)
        loss = final_loss(log)
        assert "restored epoch=" in log, log[-4000:]
        assert c.incarnations(f"{NAME}-ps-0") >= 2
    print(
        f"kubernetes: loss={loss:.3g} first_epoch_s={first_epoch:.1f} "
        f"kill_to_end_s={recovered:.1f} total_s={took:.1f}"
    )
