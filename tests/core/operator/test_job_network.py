"""A job's NetworkPolicy (``core.operator.job_network``): it fences the job's master and PS pods,
admits on every port only pods of the same job (the TCPStore's port is ephemeral), and leaves the
token-guarded metrics port open for Prometheus; nothing else."""

from flexjob.api import names
from flexjob.core.operator.job_network import job_network_policy


def _selects(selector: dict[str, object], labels: dict[str, str]) -> bool:
    """Whether a Kubernetes label ``selector`` (matchLabels, matchExpressions ``In``) selects a
    pod with ``labels``: the API server's rule, for the shapes this policy uses."""
    wanted = dict(selector.get("matchLabels") or {})  # type: ignore[call-overload]
    if any(labels.get(k) != v for k, v in wanted.items()):
        return False
    for rule in selector.get("matchExpressions") or []:  # type: ignore[attr-defined]
        assert rule["operator"] == "In"
        if labels.get(rule["key"]) not in rule["values"]:
            return False
    return True


def _pod(job: str, rtype: str) -> dict[str, str]:
    return {names.LABEL_JOB_NAME: job, names.LABEL_REPLICA_TYPE: rtype}


def test_the_policy_fences_the_jobs_master_and_ps_pods_only() -> None:
    spec = job_network_policy("team-a", "ctr")["spec"]
    fenced = {
        rtype
        for rtype in ("master", "ps", "worker", "chief", "evaluator")
        if _selects(spec["podSelector"], _pod("ctr", rtype))
    }
    assert fenced == {"master", "ps"}
    assert not _selects(spec["podSelector"], _pod("other", "master"))
    assert spec["policyTypes"] == ["Ingress"]


def test_only_the_jobs_own_pods_reach_every_port_of_its_master() -> None:
    own, _metrics = job_network_policy("team-a", "ctr")["spec"]["ingress"]
    assert "ports" not in own  # every port: the gRPC port and the TCPStore's ephemeral one
    (peer,) = own["from"]
    assert set(peer) == {"podSelector"}  # same namespace only: no namespaceSelector, no ipBlock
    for rtype in ("worker", "ps", "master"):
        assert _selects(peer["podSelector"], _pod("ctr", rtype))
    assert not _selects(peer["podSelector"], _pod("other", "worker"))
    assert not _selects(peer["podSelector"], {})


def test_from_elsewhere_only_the_metrics_port_is_open() -> None:
    _, metrics = job_network_policy("team-a", "ctr")["spec"]["ingress"]
    assert metrics == {"ports": [{"protocol": "TCP", "port": names.METRICS_PORT}]}


def test_the_policy_is_named_and_labelled_for_its_job() -> None:
    meta = job_network_policy("team-a", "ctr")["metadata"]
    assert meta == {
        "name": "ctr-master",
        "namespace": "team-a",
        "labels": {names.LABEL_JOB_NAME: "ctr"},
    }
