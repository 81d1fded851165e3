"""The Python SDK: manage flexjob jobs from a notebook or a script (``FlexjobClient``).

See ``docs/python-sdk.md``. Not for the CLI's printing (``flexjob.cli``). The SDK's module is
imported on first use, so a command that only reads the client config (``flexjob.client.config``,
e.g. a relaunched ``flexjob ps``) does not pay for it.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flexjob.client.client import FlexjobClient, JobFailedError

__all__ = ["FlexjobClient", "JobFailedError"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from flexjob.client import client

        return getattr(client, name)
    raise AttributeError(f"module 'flexjob.client' has no attribute {name!r}")
