"""Public names: the Kubernetes group and version, label keys and environment variables.

These strings are API: renaming one breaks running jobs. Nothing here computes anything.
"""

GROUP = "flexjob.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND_JOB = "ElasticJob"
KIND_SCALE_PLAN = "ScalePlan"
PLURAL_JOB = "elasticjobs"
PLURAL_SCALE_PLAN = "scaleplans"

LABEL_JOB_NAME = f"{GROUP}/job-name"
LABEL_REPLICA_TYPE = f"{GROUP}/replica-type"
LABEL_REPLICA_INDEX = f"{GROUP}/replica-index"
LABEL_RANK = f"{GROUP}/rank"
LABEL_NODE = f"{GROUP}/node"

ENV_MASTER = "FLEXJOB_MASTER"
ENV_JOB_NAME = "FLEXJOB_JOB_NAME"
ENV_REPLICA_TYPE = "FLEXJOB_REPLICA_TYPE"
ENV_REPLICA_INDEX = "FLEXJOB_REPLICA_INDEX"
ENV_NODE_ID = "FLEXJOB_NODE_ID"

DEFAULT_NAMESPACE = "default"
DEFAULT_MASTER_PORT = 50001
