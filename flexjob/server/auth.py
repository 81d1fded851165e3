"""The HTTP services' use of bearer tokens: the paths that stay open without one.

The rule for where a service may listen and the token check are ``flexjob.rpc.auth`` (shared
with the brain and the job master); re-exported here for the server's modules.
"""

from flexjob.rpc.auth import InsecureBindError, check_bind, is_loopback, token_matches

OPEN_PATHS = frozenset({"/healthz"})

__all__ = ["OPEN_PATHS", "InsecureBindError", "check_bind", "is_loopback", "token_matches"]
