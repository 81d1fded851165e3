"""The install manifests: least-privilege RBAC, the Deployment, webhooks wired to kopf's paths."""

import yaml
from typer.testing import CliRunner

from flexjob.api.foreign_kinds import FOREIGN_KINDS
from flexjob.cli.main import app
from flexjob.core.operator.job_master import JOB_MASTER_SERVICE_ACCOUNT
from flexjob.operator.kubernetes.admission import (
    MUTATE_JOB,
    VALIDATE_JOB,
    VALIDATE_PLAN,
    validate_foreign,
)
from flexjob.operator.manifests import NAME, SECRETS_ROLE, InstallConfig, install_manifests
from tests.support.k8s_fixtures import CERT_MANAGER, EmulatorThread


def by_kind(kind: str, options: InstallConfig | None = None) -> list[dict[str, object]]:
    return [m for m in install_manifests(options) if m["kind"] == kind]


def named(kind: str, name: str, options: InstallConfig | None = None) -> list[dict[str, object]]:
    return [m for m in by_kind(kind, options) if m["metadata"]["name"] == name]  # type: ignore[index]


def test_cluster_role_grants_only_named_verbs_and_resources() -> None:
    (role,) = named("ClusterRole", NAME)
    rules = role["rules"]
    assert all("*" not in r["verbs"] and "*" not in r["resources"] for r in rules)  # type: ignore[attr-defined,index]
    grants = {(res, verb) for r in rules for res in r["resources"] for verb in r["verbs"]}  # type: ignore[attr-defined,index]
    assert ("pods", "create") in grants
    assert ("pods", "update") not in grants
    # no Secret anywhere: those rights are granted in the job namespaces only (SECRETS_ROLE)
    assert not {res for res, _ in grants} & {"secrets"}
    assert ("elasticjobs/status", "patch") in grants


def test_job_master_role_grants_only_what_the_master_calls() -> None:
    (role,) = named("ClusterRole", JOB_MASTER_SERVICE_ACCOUNT)
    assert role["rules"] == [
        {"apiGroups": ["flexjob.dev"], "resources": ["elasticjobs"], "verbs": ["get"]},
        {"apiGroups": ["flexjob.dev"], "resources": ["elasticjobs/status"], "verbs": ["patch"]},
        {"apiGroups": ["flexjob.dev"], "resources": ["scaleplans"], "verbs": ["create"]},
        {"apiGroups": ["flexjob.dev"], "resources": ["scaleplans/status"], "verbs": ["patch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]


def test_job_master_account_is_bound_in_each_job_namespace_only() -> None:
    options = InstallConfig(job_namespaces=("team-a", "team-b", "team-a"))
    accounts = named("ServiceAccount", JOB_MASTER_SERVICE_ACCOUNT, options)
    bindings = named("RoleBinding", JOB_MASTER_SERVICE_ACCOUNT, options)
    assert [a["metadata"]["namespace"] for a in accounts] == ["team-a", "team-b"]  # type: ignore[index]
    assert [
        (b["metadata"]["namespace"], b["roleRef"]["name"], b["subjects"])  # type: ignore[index]
        for b in bindings
    ] == [
        (ns, JOB_MASTER_SERVICE_ACCOUNT, [
            {"kind": "ServiceAccount", "name": JOB_MASTER_SERVICE_ACCOUNT, "namespace": ns}
        ])
        for ns in ("team-a", "team-b")
    ]  # fmt: skip
    assert named("ClusterRoleBinding", JOB_MASTER_SERVICE_ACCOUNT, options) == []


def test_install_binds_job_masters_in_the_given_namespaces() -> None:
    args = ["manifests", "install", "--job-namespace", "ml", "--job-namespace", "research"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    documents = list(yaml.safe_load_all(result.output))
    masters = [
        d["metadata"]["namespace"]
        for d in documents
        if d["kind"] == "RoleBinding" and d["roleRef"]["name"] == JOB_MASTER_SERVICE_ACCOUNT
    ]
    assert masters == ["ml", "research"]


def test_the_operator_may_touch_secrets_policies_and_claims_in_the_job_namespaces_only() -> None:
    options = InstallConfig(namespace="ops", job_namespaces=("team-a", "team-b", "team-a"))
    (role,) = named("ClusterRole", SECRETS_ROLE, options)
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create", "get"]},
        {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["create"]},
        # each job master's state claim (core.operator.master_state), owned by its job
        {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["create"]},
    ]
    bindings = named("RoleBinding", SECRETS_ROLE, options)
    assert [
        (b["metadata"]["namespace"], b["roleRef"], b["subjects"])  # type: ignore[index]
        for b in bindings
    ] == [
        (ns, {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": SECRETS_ROLE},
         [{"kind": "ServiceAccount", "name": NAME, "namespace": "ops"}])
        for ns in ("team-a", "team-b")
    ]  # fmt: skip
    assert named("ClusterRoleBinding", SECRETS_ROLE, options) == []


def test_deployment_runs_the_operator_as_its_service_account() -> None:
    (deployment,) = by_kind("Deployment")
    pod = deployment["spec"]["template"]["spec"]  # type: ignore[index]
    assert pod["serviceAccountName"] == NAME
    assert pod["containers"][0]["args"][:3] == ["-m", "flexjob", "operator"]


def test_webhook_configurations_call_the_operators_webhook_paths() -> None:
    paths = {
        hook["clientConfig"]["service"]["path"]
        for config in by_kind("ValidatingWebhookConfiguration")
        + by_kind("MutatingWebhookConfiguration")
        for hook in config["webhooks"]  # type: ignore[attr-defined]
    }
    foreign = {f"/{validate_foreign(k)}" for k in FOREIGN_KINDS if k.job}
    assert foreign == {"/validate-dijob", "/validate-elasticaijob", "/validate-dlrover-elasticjob"}
    assert paths == {f"/{VALIDATE_JOB}", f"/{VALIDATE_PLAN}", f"/{MUTATE_JOB}", *foreign}


def test_without_cert_manager_no_certificate_is_requested() -> None:
    assert by_kind("Certificate", InstallConfig(cert_manager=False)) == []


def test_install_prints_crds_first() -> None:
    result = CliRunner().invoke(app, ["manifests", "install", "--namespace", "ml"])
    assert result.exit_code == 0, result.output
    documents = list(yaml.safe_load_all(result.output))
    assert [d["kind"] for d in documents[:2]] == ["CustomResourceDefinition"] * 2
    assert {d["metadata"].get("namespace") for d in documents if d["kind"] == "Deployment"} == {
        "ml"
    }


def test_install_apply_creates_then_replaces_every_object() -> None:
    with EmulatorThread() as emulator:
        for kind in CERT_MANAGER:
            emulator.declare(kind)
        args = ["manifests", "install", "--apply", "--server", emulator.base_url]
        first = CliRunner().invoke(app, args)
        second = CliRunner().invoke(app, args)
        deployments = emulator.store.select(
            emulator.kind("apps", "v1", "deployments"), "flexjob-system"
        )
    assert first.exit_code == 0, first.output
    assert first.output.count(" created") == len(install_manifests()), first.output
    assert second.output.count(" replaced") == len(install_manifests()), second.output
    assert [d["metadata"]["name"] for d in deployments] == [NAME]
