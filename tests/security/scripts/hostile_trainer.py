"""A training script of a ``flexjob run`` job that tries to act as another node and as a
holder of the job's token; writes what it got to ``$PROBE_OUT/<node>.json`` and exits 0."""

import json
import os
from pathlib import Path

from flexjob.api.errors import FlexjobError
from flexjob.rpc.client import MasterClient

node = os.environ["FLEXJOB_NODE_ID"]
master = os.environ["FLEXJOB_MASTER"]
got: dict[str, object] = {
    "token_vars": sorted(k for k in os.environ if k.startswith("FLEXJOB_MASTER_TOKEN")),
    "credential_of": os.environ.get("FLEXJOB_NODE_CREDENTIAL", "").split(":")[1],
}


def attempt(name: str, node_id: str, token: str | None) -> None:
    try:
        with MasterClient(master, node_id, token=token, retry_deadline=5) as c:
            c.heartbeat()
        got[name] = "served"
    except FlexjobError as exc:
        got[name] = str(exc).split(":")[0]


attempt("as_itself", node, None)  # its own credential, from the environment
attempt("as_another_node", "worker-9", None)
attempt("without_credential", node, "")
Path(os.environ["PROBE_OUT"], f"{node}.json").write_text(json.dumps(got))
