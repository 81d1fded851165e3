"""The Python SDK: manage flexjob jobs from a notebook or a script (``FlexjobClient``).

See ``docs/python-sdk.md``. Not for the CLI's printing (``flexjob.cli``).
"""

from flexjob.client.client import FlexjobClient, JobFailedError

__all__ = ["FlexjobClient", "JobFailedError"]
