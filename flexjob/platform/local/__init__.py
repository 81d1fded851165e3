"""The local platform: every replica a process on this machine, state in SQLite."""

from flexjob.platform.local.platform import LocalPlatform

__all__ = ["LocalPlatform"]
