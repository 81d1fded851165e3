"""Each replica's node credential, put into the replica as the operator creates it.

The job's token reaches only ``api.roles.TOKEN_HOLDERS`` (the master); every other replica of
a job that runs flexjob's master gets ``FLEXJOB_NODE_CREDENTIAL``: the credential of its own
node (``<type>-<index>``, the node id its agent takes: ``agent.config.default_node_id``; a PS
replica's ``ps-<index>``), an HMAC under the token (``rpc.auth.node_credential``), so that it
can act as that node only. A PS replica also gets ``FLEXJOB_PS_SECRET`` (``rpc.ps_auth``: the
key that checks its clients' credentials, and the master's credential for that PS alone).
An HMAC cannot come from a Secret through ``secretKeyRef``,
so the operator reads the token (the local token file, the job's Secret on Kubernetes) and
writes the credential into the replica's environment (on Kubernetes the pod's ``env``: readable
by whoever may read the pod, and good for that one node only; the token itself stays in the
Secret, which only the master's pod references). Not for the token's creation
(``operator.reconcile_pass``, ``operator.local.runner``) nor its check (``rpc.auth``).
"""

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from flexjob.api import ElasticJob, EnvVar, names
from flexjob.api.roles import PS_TYPE, TOKEN_HOLDERS
from flexjob.core.operator.actions import Action, CreateReplica
from flexjob.core.operator.job_master import (
    SECRET_TOKEN_KEY,
    JobMasterConfig,
    flexjob_runs_master,
    master_token_file,
    master_token_secret,
)
from flexjob.core.replicas import ReplicaRequest
from flexjob.platform.contract import Platform, SecretStore
from flexjob.rpc.auth import node_credential
from flexjob.rpc.ps_auth import ps_secret


def _needs_credential(action: Action) -> bool:
    return isinstance(action, CreateReplica) and action.request.type not in TOKEN_HOLDERS


def _credited(action: Action, token: str) -> Action:
    if isinstance(action, CreateReplica) and action.request.type not in TOKEN_HOLDERS:
        return CreateReplica(with_credential(action.request, token))
    return action


def job_token(platform: Platform, job: ElasticJob, options: JobMasterConfig) -> str | None:
    """The job's token where the operator keeps it: the local token file, else the job's
    Secret (Kubernetes); None when there is none (yet)."""
    if options.token_root:
        path = Path(master_token_file(options.token_root, job.namespace, job.name))
        return path.read_text().strip() or None if path.exists() else None
    if options.token_secret and isinstance(platform, SecretStore):
        data = platform.read_secret(job.namespace, master_token_secret(job.name))
        return (data or {}).get(SECRET_TOKEN_KEY) or None
    return None


def with_credential(request: ReplicaRequest, token: str) -> ReplicaRequest:
    """``request`` whose containers hold its node's credential (a PS replica's also its PS
    secret) and no job token."""
    own = {names.ENV_NODE_CREDENTIAL: node_credential(token, request.short_name)}
    if request.type is PS_TYPE:
        own[names.ENV_PS_SECRET] = ps_secret(token, request.index)
    dropped = (names.ENV_MASTER_TOKEN, names.ENV_MASTER_TOKEN_FILE, *own)
    env = {k: v for k, v in request.env.items() if k not in dropped} | own
    containers = []
    for container in request.template.spec.containers:
        kept = [e for e in container.env if e.name not in dropped]
        added = [EnvVar(name=k, value=v) for k, v in own.items()]
        containers.append(container.model_copy(update={"env": [*kept, *added]}))
    spec = request.template.spec.model_copy(update={"containers": containers})
    template = request.template.model_copy(update={"spec": spec})
    return replace(request, env=env, template=template)


def with_node_credentials(
    platform: Platform,
    job: ElasticJob,
    actions: Sequence[Action],
    options: JobMasterConfig | None,
) -> tuple[Action, ...]:
    """``actions`` whose replica creates outside ``TOKEN_HOLDERS`` carry their node's
    credential (``with_credential``), for a job that runs flexjob's master and has a token."""
    if options is None or not flexjob_runs_master(job) or not any(map(_needs_credential, actions)):
        return tuple(actions)
    token = job_token(platform, job, options)
    if token is None:
        return tuple(actions)
    return tuple(_credited(a, token) for a in actions)
