"""Public names: the Kubernetes group and version, label keys and environment variables.

These strings are API: renaming one breaks running jobs. Every ``FLEXJOB_*`` variable flexjob
reads or sets is named here once (docs/architecture.md lists them). Nothing here computes
anything.
"""

GROUP = "flexjob.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND_JOB = "ElasticJob"
KIND_SCALE_PLAN = "ScalePlan"
PLURAL_JOB = "elasticjobs"
PLURAL_SCALE_PLAN = "scaleplans"
#: (group, version, plural) of each resource, as kopf's handlers name what they watch.
JOB_RESOURCE = (GROUP, VERSION, PLURAL_JOB)
SCALE_PLAN_RESOURCE = (GROUP, VERSION, PLURAL_SCALE_PLAN)

LABEL_JOB_NAME = f"{GROUP}/job-name"
LABEL_REPLICA_TYPE = f"{GROUP}/replica-type"
LABEL_REPLICA_INDEX = f"{GROUP}/replica-index"
LABEL_RANK = f"{GROUP}/rank"
LABEL_NODE = f"{GROUP}/node"
# The DI Orchestrator v2 task a replica belongs to (``api.di_tasks``); also its environment.
LABEL_TASK_NAME = f"{GROUP}/task-name"
ENV_TASK_NAME = "FLEXJOB_TASK_NAME"

ENV_MASTER = "FLEXJOB_MASTER"
ENV_JOB_NAME = "FLEXJOB_JOB_NAME"
ENV_REPLICA_TYPE = "FLEXJOB_REPLICA_TYPE"
ENV_REPLICA_INDEX = "FLEXJOB_REPLICA_INDEX"
ENV_NODE_ID = "FLEXJOB_NODE_ID"
# A replica with its own service (other than the master) finds its address here.
ENV_REPLICA_ADDRESS = "FLEXJOB_REPLICA_ADDRESS"
# The operator → its implicit job master: the typed MasterConfig as JSON
# (core.training.master_config).
ENV_MASTER_CONFIG = "FLEXJOB_MASTER_CONFIG"
# The operator's own image on Kubernetes; implicit job masters run it.
ENV_IMAGE = "FLEXJOB_IMAGE"
# Where the local platform and the brain keep their files (``platform.local.paths.flexjob_home``),
# by default DEFAULT_HOME ("~" is the user's home directory).
ENV_HOME = "FLEXJOB_HOME"
DEFAULT_HOME = "~/.flexjob"
# Which platform the CLI uses: local | kubernetes.
ENV_PLATFORM = "FLEXJOB_PLATFORM"
# The bearer token of `flexjob server` (needed to listen beyond loopback).
ENV_SERVER_TOKEN = "FLEXJOB_SERVER_TOKEN"
# The agent's pid, set for its training processes.
ENV_AGENT_PID = "FLEXJOB_AGENT_PID"
# The resources a replica was given (its main container's requests), set by the local platform
# for each replica process: CPU in cores (e.g. "1.5"), memory in MiB (e.g. "1536"), GPUs.
ENV_CPU = "FLEXJOB_CPU"
ENV_MEMORY_MIB = "FLEXJOB_MEMORY_MIB"
ENV_GPU = "FLEXJOB_GPU"

# DI-engine's own variables, set for every replica of a DI role (DI Orchestrator v1): where the
# replica runs, the server its coordinator asks for collectors and learners (URL and API
# version), and the port it listens on.
ENV_DI_POD_NAMESPACE = "KUBERNETES_POD_NAMESPACE"
ENV_DI_POD_NAME = "KUBERNETES_POD_NAME"
ENV_DI_SERVER_URL = "KUBERNETES_SERVER_URL"
ENV_DI_SERVER_API_VERSION = "KUBERNETES_SERVER_API_VERSION"
DI_SERVER_API_VERSION = "v1alpha2"
ENV_COORDINATOR_PORT = "COORDINATOR_PORT"
ENV_COLLECTOR_PORT = "COLLECTOR_PORT"
ENV_LEARNER_PORT = "LEARNER_PORT"
ENV_AGGREGATOR_PORT = "AGGREGATOR_PORT"
# DI Orchestrator v2's variables on every replica of a DIJob v2 (``core.operator.di_task_env``):
# the job (namespace/name), the replica's rank among all the job's replicas, every replica's
# host in rank order, those of its own type under DI_<TASK>_NODES (the task's name, upper
# case, '-' as '_'), and the server; each replica listens on DI_TASK_PORT, as DI's pods do.
ENV_DI_JOB_ID = "DI_JOB_ID"
ENV_DI_RANK = "DI_RANK"
ENV_DI_NODES = "DI_NODES"
ENV_DI_TASK_NODES = "DI_{task}_NODES"
ENV_DI_V2_SERVER_URL = "DI_SERVER_URL"
DI_TASK_PORT = 22270
# DI-engine's default ports (the services' ports on Kubernetes; locally each replica gets a
# free port instead).
DEFAULT_COLLECTOR_PORT = 22270
DEFAULT_LEARNER_PORT = 22271
DEFAULT_AGGREGATOR_PORT = 22272
DEFAULT_COORDINATOR_PORT = 22273
# The operator → DI replicas: the URL of the flexjob server (``KUBERNETES_SERVER_URL``).
ENV_SERVER_URL = "FLEXJOB_SERVER_URL"
# The job master's bearer token (``rpc.auth``): the token itself (on Kubernetes from the job's
# Secret through ``secretKeyRef``), or a file holding it (locally a 0600 file in the job dir).
ENV_MASTER_TOKEN = "FLEXJOB_MASTER_TOKEN"
ENV_MASTER_TOKEN_FILE = "FLEXJOB_MASTER_TOKEN_FILE"
#: The name of that file in a job's directory (``flexjob run``'s, the local operator's).
MASTER_TOKEN_FILE = "master.token"
# A node's own credential for the job master instead of the token (``rpc.auth.node_credential``:
# it acts only as that node and its processes); ``flexjob run`` gives one to each agent.
ENV_NODE_CREDENTIAL = "FLEXJOB_NODE_CREDENTIAL"
# A PS replica's secret instead of the token (``rpc.ps_auth.ps_secret``: the job's member key,
# which checks the members' credentials, and the master's credential for this one PS).
ENV_PS_SECRET = "FLEXJOB_PS_SECRET"
# The brain's bearer token (``flexjob brain --token``; clients send it).
ENV_BRAIN_TOKEN = "FLEXJOB_BRAIN_TOKEN"
# The brain's database URL (``flexjob brain --db``; on a cluster from a Secret).
ENV_BRAIN_DB = "FLEXJOB_BRAIN_DB"

DEFAULT_NAMESPACE = "default"
DEFAULT_MASTER_PORT = 50001
DEFAULT_PS_PORT = 50002

# Parameter-server jobs: the size of the PS set (set on every replica of a job with `ps`
# replicas), and the PS addresses in PS-index order, comma-separated (set by whoever knows them
# before the trainer starts: the agent, `flexjob run`; else the trainer asks the master).
ENV_NUM_PS = "FLEXJOB_NUM_PS"
ENV_PS_ADDRESSES = "FLEXJOB_PS_ADDRESSES"
# Where each `flexjob ps` of a job writes its partition checkpoints (shared by the whole PS set;
# unset: no PS checkpoints), and every how many seconds.
ENV_PS_CHECKPOINT_DIR = "FLEXJOB_PS_CHECKPOINT_DIR"
ENV_PS_CHECKPOINT_INTERVAL = "FLEXJOB_PS_CHECKPOINT_INTERVAL"

# torch's own variables, set by the agent (and by the trainer helpers after each re-formed world).
ENV_RANK = "RANK"
ENV_LOCAL_RANK = "LOCAL_RANK"
ENV_WORLD_SIZE = "WORLD_SIZE"
ENV_LOCAL_WORLD_SIZE = "LOCAL_WORLD_SIZE"
ENV_MASTER_ADDR = "MASTER_ADDR"
ENV_MASTER_PORT = "MASTER_PORT"
# The rest of torchrun's worker contract (docs/elastic-run.md has the table of meanings and
# values): ``torch.distributed.is_torchelastic_launched()`` is true once TORCHELASTIC_RUN_ID is
# set, and frameworks (Lightning's TorchElasticEnvironment) then read these instead of their
# own launchers'. Set by the agent (agent.torchrun_env, trainer.world.world_env).
ENV_TORCHELASTIC_RUN_ID = "TORCHELASTIC_RUN_ID"
ENV_TORCHELASTIC_RESTART_COUNT = "TORCHELASTIC_RESTART_COUNT"
ENV_TORCHELASTIC_MAX_RESTARTS = "TORCHELASTIC_MAX_RESTARTS"
ENV_TORCHELASTIC_ERROR_FILE = "TORCHELASTIC_ERROR_FILE"
ENV_GROUP_RANK = "GROUP_RANK"
ENV_GROUP_WORLD_SIZE = "GROUP_WORLD_SIZE"
ENV_ROLE_NAME = "ROLE_NAME"
ENV_ROLE_RANK = "ROLE_RANK"
ENV_ROLE_WORLD_SIZE = "ROLE_WORLD_SIZE"
ENV_OMP_NUM_THREADS = "OMP_NUM_THREADS"
#: torchrun's default role name (every flexjob world is one worker group).
ROLE_NAME = "default"
# torch's NCCL error handling (docs/gpu.md): the trainer sets both unless set (trainer.breaker).
ENV_NCCL_BLOCKING_WAIT = "TORCH_NCCL_BLOCKING_WAIT"
ENV_NCCL_ASYNC_ERROR_HANDLING = "TORCH_NCCL_ASYNC_ERROR_HANDLING"
#: The interface gloo binds (torch's); the agent sets it to the one holding its ``--address``.
ENV_GLOO_SOCKET_IFNAME = "GLOO_SOCKET_IFNAME"
# A plain torch world (a job with no master, core.operator.torch_world): the operator sets
# MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK on every training replica (as Kubeflow's PyTorchJob
# does), and with an elasticPolicy the flags torchrun reads from PET_<FLAG>. Its rank-0 replica's
# service port on Kubernetes when the container declares none (Kubeflow's; locally a free port).
ENV_PET_NNODES = "PET_NNODES"
ENV_PET_RDZV_ENDPOINT = "PET_RDZV_ENDPOINT"
ENV_PET_RDZV_BACKEND = "PET_RDZV_BACKEND"
ENV_PET_NPROC_PER_NODE = "PET_NPROC_PER_NODE"
ENV_PET_MAX_RESTARTS = "PET_MAX_RESTARTS"
DEFAULT_TORCH_MASTER_PORT = 23456
# A TensorFlow cluster (a job whose ps replicas run their own command, core.operator.tf_cluster):
# every replica of a type with a TensorFlow task gets TF_CONFIG (the cluster's addresses, its
# own task) and a service, on Kubeflow's TFJob port when its container declares none (locally a
# free port); the label says which cluster its TF_CONFIG lists, so a changed cluster restarts it.
ENV_TF_CONFIG = "TF_CONFIG"
DEFAULT_TF_PORT = 2222
LABEL_TF_CLUSTER = f"{GROUP}/tf-cluster"

# Agent → training process: the rendezvous round the process starts in, the store of that
# round, and the file where the trainer helpers publish progress for the agent to report.
ENV_ROUND = "FLEXJOB_ROUND"
ENV_STORE_ADDRESS = "FLEXJOB_STORE_ADDRESS"
ENV_STORE_PREFIX = "FLEXJOB_STORE_PREFIX"
ENV_NODE_RANK = "FLEXJOB_NODE_RANK"
ENV_NUM_NODES = "FLEXJOB_NUM_NODES"
ENV_STATUS_FILE = "FLEXJOB_STATUS_FILE"
# Agent → training process: the agent's membership with the master when it started the process
# (``core.training.fencing``): the process's calls carry it, so a late call of a process of a
# membership the master fenced is refused.
ENV_INCARNATION = "FLEXJOB_INCARNATION"
# Agent → training process: where the trainer helpers checkpoint unless told otherwise (in the
# job directory, per job incarnation), and the seconds a collective may wait for a peer (below
# the agent's hang timeout, so a healthy peer of a hung process leaves the collective first).
ENV_CHECKPOINT_DIR = "FLEXJOB_CHECKPOINT_DIR"
ENV_COLLECTIVE_TIMEOUT = "FLEXJOB_COLLECTIVE_TIMEOUT"
# The collective backend of a training process (``gloo`` or ``nccl``; unset: nccl on a CUDA
# device, gloo on the CPU, ``core.training.devices``) (user).
ENV_BACKEND = "FLEXJOB_BACKEND"
# Shards a training process leases from the master per call: ``auto`` (from 1, doubling while
# leases are used up quickly, up to 32, ``core.training.lease_size``) or a fixed number (more: fewer
# calls, a longer tail at the end of the data). Unset: ``auto`` for ElasticDistributedSampler,
# 1 for ElasticSampler (each of its reports is a call that leases the next shard anyway).
ENV_SHARD_LEASE = "FLEXJOB_SHARD_LEASE"
# Seconds between rank 0's re-plans of an adaptive global batch (``spec.batch.adaptive``,
# ``trainer.batch_adapter``) while the world stays the same; a number > 0, default 30 (user).
ENV_BATCH_REPLAN_S = "FLEXJOB_BATCH_REPLAN_S"
# Flash checkpoints (docs/flash-checkpoint.md): ``1`` turns them on in ElasticTrainer (user);
# the agent hands each worker the socket it notes its saves on and its shared-memory directory.
ENV_FLASH_CHECKPOINT = "FLEXJOB_FLASH_CHECKPOINT"
ENV_FLASH_FD = "FLEXJOB_FLASH_FD"
ENV_FLASH_SHM_DIR = "FLEXJOB_FLASH_SHM_DIR"
# Whether an agent's workers import torch before the node joins: 1, 0 or auto (the default:
# unless the script imports only the standard library; agent.target.preimport_torch).
ENV_PREIMPORT_TORCH = "FLEXJOB_PREIMPORT_TORCH"
# 1: every new world runs the pre-flight check before it trains (trainer.preflight;
# flexjob run --preflight).
ENV_PREFLIGHT = "FLEXJOB_PREFLIGHT"
# Where warm spares (`flexjob agent --spare`) wait for a node, and where `flexjob agent` looks
# for one (default: flexjob-spares-<uid> in the temporary directory; agent.spare).
ENV_SPARE_DIR = "FLEXJOB_SPARE_DIR"
# The job's elasticPolicy.nProcPerNode and maxRestarts, set by the operator for every replica
# that trains; `flexjob agent` takes them as the defaults of --nproc-per-node and --max-restarts.
ENV_NPROC_PER_NODE = "FLEXJOB_NPROC_PER_NODE"
ENV_MAX_RESTARTS = "FLEXJOB_MAX_RESTARTS"

# Keys in the job master's KV store.
KV_STEP = "flexjob/progress/step"  # rank 0's step, for progress displays
KV_LOSS = "flexjob/progress/loss"  # rank 0's last reported loss (ElasticTrainer.report_loss)
KV_IN_PLACE = "flexjob/in-place"  # set once the trainer helpers run: workers join by themselves
# After a round's store prefix: MASTER_ADDR:MASTER_PORT of that round (scripts using env://).
KV_TORCH_MASTER = "torch-master"
KV_PS_ADDRESS_PREFIX = "flexjob/ps/address/"  # + PS index: where that PS replica serves
KV_PS_CHECKPOINT_REQUEST = "flexjob/ps/checkpoint-request"  # a new value: every PS checkpoints
KV_PS_VERSION_PREFIX = "flexjob/ps/version/"  # + PS index: its dense version, every few seconds
KV_PS_LOST_UPDATES = "flexjob/ps/lost-dense-updates"  # dense updates lost to PS restores, summed
KV_PS_DIRTY_ROWS_PREFIX = "flexjob/ps/dirty-rows/"  # + PS index: rows pushed since its checkpoint
KV_PS_LOST_ROWS = "flexjob/ps/lost-rows"  # embedding-row pushes lost to PS restores, summed
# The PS set trainers use (JSON ``core.ps.set_change.PsSetInfo``: version, addresses), written by
# the master's PS-set driver; and each PS replica's membership (JSON ``PsMember``: address,
# state), + PS index, written by that replica every few seconds.
KV_PS_SET = "flexjob/ps/set"
KV_PS_MEMBER_PREFIX = "flexjob/ps/member/"
# The PS-set change the master's driver is running (JSON ``core.ps.set_change.ChangeRecord``:
# old and new set, the step reached), written before each step, emptied when the change ended;
# a restarted master finishes or undoes what it finds there.
KV_PS_CHANGE = "flexjob/ps/change"
# Test hook: the step (``ChangeStep`` value) before which the PS-set driver stops and waits (until
# the master stops), so a test can kill a master in the middle of a change.
ENV_PS_CHANGE_HOLD = "FLEXJOB_TEST_PS_CHANGE_HOLD"
# Set once by the first master of a job directory; default checkpoints live under it, so a
# re-used directory or job name never resumes another job's weights.
KV_INCARNATION = "flexjob/incarnation"
# The job's measured goodput profilings (JSON, the ``status.profilings`` format the Allocator
# reads: step times per shape, local batch, gradient noise scale), from trainer.goodput.
KV_PROFILINGS = "flexjob/profilings"
# Root causes of a failed job (agent.failure): a counter, and each one (JSON) at the prefix + n
# (n from 1).
KV_FAILURES = "flexjob/failures"
KV_FAILURE_PREFIX = "flexjob/failure/"
# + node id: how many times an agent of that node started in this job (a restarted pod or agent
# keeps its node id; from the second start on, the shards its previous workers held go back).
KV_AGENT_STARTS_PREFIX = "flexjob/agent-starts/"
# + node id: the master keeps that node out of every later world (master.stragglers).
KV_EXCLUDED_PREFIX = "flexjob/excluded/"

# Prometheus metrics of a flexjob process (master, agent, operator, brain): where its /metrics
# endpoint listens ("HOST:PORT"; port 0 picks a free one; "off" serves none; default
# 127.0.0.1:0), and the bearer token a scraper must send when HOST is not a loopback address.
ENV_METRICS_ADDR = "FLEXJOB_METRICS_ADDR"
ENV_METRICS_TOKEN = "FLEXJOB_METRICS_TOKEN"
DEFAULT_METRICS_ADDR = "127.0.0.1:0"
METRICS_PORT = 9464  # the fixed port the Kubernetes manifests expose and annotate for scraping

# The secrets of the services a user may run from the shell that starts local jobs: a local
# replica never inherits them (its own environment gives it what it needs, e.g. its job's
# master token file); only a job master keeps the brain's token (it asks the brain for plans).
# Nor the metrics address that goes with the metrics token: a replica serves on loopback.
SECRET_ENV = (
    ENV_SERVER_TOKEN,
    ENV_BRAIN_TOKEN,
    ENV_BRAIN_DB,
    ENV_METRICS_TOKEN,
    ENV_METRICS_ADDR,
    ENV_MASTER_TOKEN,
    ENV_MASTER_TOKEN_FILE,
    ENV_PS_SECRET,
)
MASTER_KEEPS_ENV = (ENV_BRAIN_TOKEN,)
