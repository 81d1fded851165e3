"""The local platform's SQLite file: schema and connections.

One short-lived connection per operation (WAL mode, busy timeout) so that several processes —
the ``flexjob submit`` that runs a job and a ``flexjob get`` in another shell — share it safely.
Not here: what the rows mean (``job_store.py``, ``runtime.py``).
"""

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    namespace TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL, status TEXT NOT NULL,
    version INTEGER NOT NULL, created REAL NOT NULL, PRIMARY KEY (namespace, name));
CREATE TABLE IF NOT EXISTS scale_plans (
    namespace TEXT NOT NULL, name TEXT NOT NULL, job TEXT NOT NULL, body TEXT NOT NULL,
    status TEXT NOT NULL, version INTEGER NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (namespace, name));
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, namespace TEXT NOT NULL, job TEXT NOT NULL,
    type TEXT NOT NULL, reason TEXT NOT NULL, message TEXT NOT NULL, time REAL NOT NULL);
CREATE TABLE IF NOT EXISTS replicas (
    namespace TEXT NOT NULL, name TEXT NOT NULL, job TEXT NOT NULL, type TEXT NOT NULL,
    idx INTEGER NOT NULL, uid TEXT NOT NULL, phase TEXT NOT NULL, exit_code INTEGER,
    pid INTEGER, owner_pid INTEGER NOT NULL, address TEXT, node TEXT, created REAL NOT NULL,
    labels TEXT NOT NULL, log_path TEXT NOT NULL, deleting INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace, name));
CREATE TABLE IF NOT EXISTS services (
    namespace TEXT NOT NULL, name TEXT NOT NULL, job TEXT NOT NULL, replica TEXT NOT NULL,
    address TEXT NOT NULL, PRIMARY KEY (namespace, name));
CREATE TABLE IF NOT EXISTS operator_leases (
    namespace TEXT NOT NULL, job TEXT NOT NULL, holder_pid INTEGER NOT NULL,
    renewed REAL NOT NULL, PRIMARY KEY (namespace, job));
CREATE TABLE IF NOT EXISTS cluster_objects (
    kind TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL, updated REAL NOT NULL,
    PRIMARY KEY (kind, name));
CREATE INDEX IF NOT EXISTS events_by_job ON events (namespace, job);
"""


class Database:
    """Opens ``path`` (creating it and its schema) and hands out transactions."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self.reading() as conn:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.executescript(SCHEMA)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self.reading() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A connection in autocommit mode that waits out other writers' locks."""
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            conn.execute("PRAGMA busy_timeout = 30000")
            yield conn
        finally:
            conn.close()
