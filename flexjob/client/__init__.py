"""The Python SDK: manage flexjob jobs from a notebook or a script (``FlexjobClient``).

See ``docs/python-sdk.md``. Not for the CLI's printing (``flexjob.cli``). The SDK's module is
imported on first use, so a command that only reads the client config (``flexjob.client.config``,
e.g. a relaunched ``flexjob ps``) does not pay for it.
"""

from typing import TYPE_CHECKING

from flexjob.lazy import lazy_exports

if TYPE_CHECKING:
    from flexjob.client.client import FlexjobClient, JobFailedError

__all__ = ["FlexjobClient", "JobFailedError"]


__getattr__, __dir__ = lazy_exports(
    __name__, {"FlexjobClient": "client", "JobFailedError": "client"}
)
