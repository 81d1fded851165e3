"""The manifests that install the flexjob operator on a cluster, as plain dicts.

CRDs (from ``api.crd``), a Namespace, a ServiceAccount, a ClusterRole with exactly the verbs the
operator uses (``RULES``), its binding, its rights on Secrets (``SECRET_RULES``) in the job
namespaces only (a RoleBinding in each), the operator Deployment, the Service in front of the
admission webhooks, and the Validating/Mutating webhook configurations. Implicit job masters
(``core.operator.job_master``) get their own identity: a ClusterRole with only
``JOB_MASTER_RULES``, and in each job namespace a ServiceAccount ``flexjob-job-master`` with a
RoleBinding to it (the namespaces must exist). TLS for the webhooks
comes from the Secret ``flexjob-operator-tls`` (mounted at ``/tls``), which cert-manager issues
from the self-signed Issuer and Certificate included here (``cert_manager=False`` leaves them
out: then create the Secret and set the configurations' ``caBundle`` yourself); cert-manager's
CA injector fills the ``caBundle``. Pure data, no client calls.
"""

import dataclasses
from typing import Any

from flexjob.api.crd import crds
from flexjob.api.foreign_kinds import AGGREGATOR_CONFIG, FOREIGN_KINDS, ForeignKind
from flexjob.api.names import ENV_IMAGE, GROUP, PLURAL_JOB, PLURAL_SCALE_PLAN, VERSION
from flexjob.core.operator.job_master import JOB_MASTER_SERVICE_ACCOUNT
from flexjob.operator.kubernetes.admission import (
    MUTATE_JOB,
    VALIDATE_JOB,
    VALIDATE_PLAN,
    validate_foreign,
)
from flexjob.operator.metrics_manifests import (
    job_pod_monitor,
    metrics_service,
    service_monitor,
    with_metrics,
)

Body = dict[str, Any]
NAME = "flexjob-operator"
#: Name of both webhook configurations.
WEBHOOK_CONFIGURATION = f"webhooks.{GROUP}"
TLS_SECRET = f"{NAME}-tls"
TLS_DIR = "/tls"
RBAC_API = "rbac.authorization.k8s.io"

Rule = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
#: (apiGroups, resources, verbs): every call the operator, kopf and the platform make.
RULES: tuple[Rule, ...] = (
    # Jobs: watched by kopf, patched for the finalizer and annotations, deleted after their TTL;
    # created for the foreign job kinds' objects.
    ((GROUP,), (PLURAL_JOB,), ("get", "list", "watch", "create", "patch", "delete")),
    ((GROUP,), (PLURAL_SCALE_PLAN,), ("get", "list", "watch", "patch", "delete")),
    ((GROUP,), (f"{PLURAL_JOB}/status", f"{PLURAL_SCALE_PLAN}/status"), ("get", "patch")),
    # Replicas and their addresses: only the operator creates or deletes them.
    (("",), ("pods",), ("get", "list", "watch", "create", "delete")),
    (("",), ("services",), ("get", "list", "watch", "create", "delete")),
    # Job events (kubectl describe), and kopf's own events.
    (("",), ("events",), ("create", "list", "deletecollection")),
    # kopf's cluster scanning: which namespaces and custom resources exist.
    (("",), ("namespaces",), ("list", "watch")),
    (("apiextensions.k8s.io",), ("customresourcedefinitions",), ("list", "watch")),
    # The foreign job kinds (api.foreign_kinds): watched, their status written back; the
    # cluster's AggregatorConfigs read for DIJob v1.
    *(((k.group,), (k.plural,), ("get", "list", "watch")) for k in FOREIGN_KINDS if k.job),
    *(((k.group,), (f"{k.plural}/status",), ("get", "patch")) for k in FOREIGN_KINDS if k.job),
    ((AGGREGATOR_CONFIG.group,), (AGGREGATOR_CONFIG.plural,), ("list",)),
)
#: The operator's rights on Secrets, granted in the job namespaces only (``secrets_rbac``), never
#: cluster-wide: each implicit job master's token (created once per job, owned by it; read by
#: name to compute the job's node credentials and PS secrets, operator.node_credentials),
#: each job's NetworkPolicy (``core.operator.job_network``), and each job master's state claim
#: (``core.operator.master_state``, owned by its job).
SECRET_RULES: tuple[Rule, ...] = (
    (("",), ("secrets",), ("create", "get")),
    (("networking.k8s.io",), ("networkpolicies",), ("create",)),
    (("",), ("persistentvolumeclaims",), ("create",)),
)
#: The ClusterRole of ``SECRET_RULES`` (bound per job namespace, so it grants nothing elsewhere).
SECRETS_ROLE = f"{NAME}-secrets"

#: Every call an implicit job master makes with ``--scale-plan-platform kubernetes``: its job
#: (owner references) and its ``status.profilings`` (``master.profilings_sync``), its ScalePlans
#: and their initial status (``KubernetesPlatform.create_scale_plan``), its pods, listed and
#: watched (``master.node_watcher``), and the Warning events it records on its job.
JOB_MASTER_RULES: tuple[Rule, ...] = (
    ((GROUP,), (PLURAL_JOB,), ("get",)),
    ((GROUP,), (f"{PLURAL_JOB}/status",), ("patch",)),
    ((GROUP,), (PLURAL_SCALE_PLAN,), ("create",)),
    ((GROUP,), (f"{PLURAL_SCALE_PLAN}/status",), ("patch",)),
    (("",), ("pods",), ("list", "watch")),
    (("",), ("events",), ("create",)),
)


@dataclasses.dataclass(frozen=True, slots=True)
class InstallConfig:
    namespace: str = "flexjob-system"
    image: str = "ghcr.io/flexjob/flexjob:0.1.0"
    webhook_port: int = 9443
    replicas: int = 1
    cert_manager: bool = True
    #: Namespaces whose jobs' implicit masters get the ``flexjob-job-master`` service account.
    job_namespaces: tuple[str, ...] = ("default",)
    #: A Secret (key ``token``) whose token Prometheus sends: the operator's /metrics is then
    #: exposed and scraped (``metrics_manifests``); empty: it stays on loopback.
    metrics_token_secret: str = ""

    @property
    def service_host(self) -> str:
        return f"{NAME}.{self.namespace}.svc"


def _meta(name: str, namespace: str | None = None) -> Body:
    meta: Body = {"name": name, "labels": {"app.kubernetes.io/name": NAME}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def _cluster_role(name: str, rules: tuple[Rule, ...]) -> Body:
    return {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": "ClusterRole",
        "metadata": _meta(name),
        "rules": [
            {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}
            for groups, resources, verbs in rules
        ],
    }


def _service_account(name: str, namespace: str) -> Body:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, namespace)}


def _binding(
    name: str,
    account_namespace: str,
    *,
    cluster_wide: bool,
    account: str = "",
    namespace: str = "",
) -> Body:
    """Grants the ClusterRole ``name`` to the service account ``account_namespace/<account>``
    (default: ``name``): everywhere (a ClusterRoleBinding), or only in ``namespace`` (default:
    its own; a RoleBinding there)."""
    return {
        "apiVersion": f"{RBAC_API}/v1",
        "kind": "ClusterRoleBinding" if cluster_wide else "RoleBinding",
        "metadata": _meta(name, None if cluster_wide else namespace or account_namespace),
        "roleRef": {"apiGroup": RBAC_API, "kind": "ClusterRole", "name": name},
        "subjects": [
            {"kind": "ServiceAccount", "name": account or name, "namespace": account_namespace}
        ],
    }


def rbac(options: InstallConfig) -> list[Body]:
    return [
        _service_account(NAME, options.namespace),
        _cluster_role(NAME, RULES),
        _binding(NAME, options.namespace, cluster_wide=True),
        *secrets_rbac(options),
    ]


def secrets_rbac(options: InstallConfig) -> list[Body]:
    """The operator's rights on Secrets (``SECRET_RULES``): a ClusterRole granted to its
    service account by a RoleBinding in each job namespace, so it can read no Secret of any
    other namespace (kube-system's, its own TLS Secret, which its pod mounts)."""
    manifests = [_cluster_role(SECRETS_ROLE, SECRET_RULES)]
    for namespace in dict.fromkeys(options.job_namespaces):
        manifests.append(
            _binding(
                SECRETS_ROLE,
                options.namespace,
                cluster_wide=False,
                account=NAME,
                namespace=namespace,
            )
        )
    return manifests


def job_master_rbac(options: InstallConfig) -> list[Body]:
    """The implicit masters' identity: one ClusterRole, and per job namespace the service
    account and a RoleBinding that grants the role there only."""
    name = JOB_MASTER_SERVICE_ACCOUNT
    manifests = [_cluster_role(name, JOB_MASTER_RULES)]
    for namespace in dict.fromkeys(options.job_namespaces):
        manifests += [
            _service_account(name, namespace),
            _binding(name, namespace, cluster_wide=False),
        ]
    return manifests


def deployment(options: InstallConfig) -> Body:
    args = [
        "-m",
        "flexjob",
        "operator",
        "--all-namespaces",
        "--webhook-port",
        str(options.webhook_port),
        "--webhook-cert",
        f"{TLS_DIR}/tls.crt",
        "--webhook-key",
        f"{TLS_DIR}/tls.key",
        "--liveness",
        "http://0.0.0.0:8080/healthz",
    ]
    container = {
        "name": "operator",
        "image": options.image,
        "command": ["python"],
        "args": args,
        # Implicit job masters (core.operator.job_master) run in the operator's own image.
        "env": [{"name": ENV_IMAGE, "value": options.image}],
        "ports": [
            {"name": "webhooks", "containerPort": options.webhook_port},
            {"name": "health", "containerPort": 8080},
        ],
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "health"}, "periodSeconds": 30},
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True},
        "volumeMounts": [{"name": "tls", "mountPath": TLS_DIR, "readOnly": True}],
    }
    volume = {"name": "tls", "secret": {"secretName": TLS_SECRET}}
    labels = {"app.kubernetes.io/name": NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(NAME, options.namespace),
        "spec": {
            "replicas": options.replicas,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": NAME,
                    "containers": [container],
                    "volumes": [volume],
                },
            },
        },
    }


def webhook_service(options: InstallConfig) -> Body:
    port = {"name": "webhooks", "port": 443, "targetPort": "webhooks"}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(NAME, options.namespace),
        "spec": {"selector": {"app.kubernetes.io/name": NAME}, "ports": [port]},
    }


def _webhook(
    options: InstallConfig, path: str, plural: str, mutating: bool, kind: ForeignKind | None = None
) -> Body:
    rule = {
        "apiGroups": [kind.group if kind else GROUP],
        "apiVersions": list(kind.versions) if kind else [VERSION],
        "operations": ["CREATE", "UPDATE"],
        "resources": [plural],
        "scope": "Namespaced",
    }
    service = {"name": NAME, "namespace": options.namespace, "path": f"/{path}", "port": 443}
    hook: Body = {
        "name": f"{path}.{GROUP}",
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": service},
        "rules": [rule],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": 10,
    }
    if mutating:
        hook["reinvocationPolicy"] = "Never"
    return hook


def certificate(options: InstallConfig) -> list[Body]:
    """cert-manager's self-signed Issuer and the serving Certificate for the webhook service."""
    issuer_ref = {"name": NAME, "kind": "Issuer"}
    dns = [options.service_host, f"{options.service_host}.cluster.local"]
    return [
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": _meta(NAME, options.namespace),
            "spec": {"selfSigned": {}},
        },
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": _meta(NAME, options.namespace),
            "spec": {"secretName": TLS_SECRET, "dnsNames": dns, "issuerRef": issuer_ref},
        },
    ]


def _webhook_meta(options: InstallConfig) -> Body:
    meta = _meta(WEBHOOK_CONFIGURATION)
    if options.cert_manager:
        meta["annotations"] = {"cert-manager.io/inject-ca-from": f"{options.namespace}/{NAME}"}
    return meta


def webhook_configurations(options: InstallConfig) -> list[Body]:
    return [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": _webhook_meta(options),
            "webhooks": [_webhook(options, MUTATE_JOB, PLURAL_JOB, mutating=True)],
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": _webhook_meta(options),
            "webhooks": [
                _webhook(options, VALIDATE_JOB, PLURAL_JOB, mutating=False),
                _webhook(options, VALIDATE_PLAN, PLURAL_SCALE_PLAN, mutating=False),
                *(
                    _webhook(options, validate_foreign(k), k.plural, mutating=False, kind=k)
                    for k in FOREIGN_KINDS
                    if k.job
                ),
            ],
        },
    ]


def install_manifests(options: InstallConfig | None = None) -> list[Body]:
    """Everything ``kubectl apply`` needs, in dependency order."""
    options = options or InstallConfig()
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(options.namespace)}
    return [
        *crds(),
        namespace,
        *rbac(options),
        *job_master_rbac(options),
        *(certificate(options) if options.cert_manager else []),
        webhook_service(options),
        *_deployment_and_metrics(options),
        *webhook_configurations(options),
    ]


def _deployment_and_metrics(options: InstallConfig) -> list[Body]:
    secret = options.metrics_token_secret
    if not secret:
        return [deployment(options)]
    labels = {"app.kubernetes.io/name": NAME}
    return [
        with_metrics(deployment(options), secret),
        metrics_service(NAME, options.namespace, labels),
        service_monitor(NAME, options.namespace, labels, secret),
        *(job_pod_monitor(namespace) for namespace in options.job_namespaces),
    ]
