"""Local replicas and services: processes of this machine, tracked in the SQLite file.

The process that creates a replica owns it (it is that process's child): it records the pid,
polls the exit code and writes it to the row, so any other process (``flexjob get``) sees the
same phases. Every replica's exit code is also written to its exit file
(``jobs/<ns>/<job>/exits/<uid>``) by the wrapper that runs it, so a replica whose owner died
(a killed operator) is judged by its pid while it runs and by that file once it is gone: a
replica that finished meanwhile reads Succeeded, not lost. ``adopt`` makes this process the
owner of such replicas. Services are free 127.0.0.1 ports handed out by name. Not here: the
job store (``job_store.py``).
"""

import json
import logging
import os
import sqlite3
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from subprocess import Popen
from typing import Any

from flexjob.api import ReplicaPhase, ReplicaType, names
from flexjob.api.errors import InvalidSpecError
from flexjob.api.quantity import cpu_cores, memory_mib, parse_quantity
from flexjob.api.roles import MASTER_TYPE
from flexjob.core.operator.replica_resources import GPU_RESOURCE
from flexjob.core.replicas import Replica, ReplicaRequest, Service, ServiceRequest
from flexjob.platform.contract import ALL_LINES, AlreadyExistsError, LogOptions, NotFoundError
from flexjob.platform.local import memory_limits, processes
from flexjob.platform.local.db import Database
from flexjob.platform.local.interpreter import own_interpreter
from flexjob.platform.local.log_tail import log_tail
from flexjob.platform.local.paths import job_dir, jobs_root, log_path
from flexjob.platform.ports import free_port

log = logging.getLogger(__name__)

LOCAL_NODE = "localhost"
_ACTIVE = (ReplicaPhase.PENDING.value, ReplicaPhase.RUNNING.value)
_COLUMNS = (
    "namespace, name, job, type, idx, uid, phase, exit_code, pid, owner_pid, address, node, "
    "created, labels, log_path, deleting"
)


def _cores(value: str) -> str:
    return f"{cpu_cores(value):g}"


def _mib(value: str) -> str:
    return str(memory_mib(value))


def _count(value: str) -> str:
    return str(int(parse_quantity(value)))


_RESOURCE_ENV: tuple[tuple[str, str, Callable[[str], str]], ...] = (
    ("cpu", names.ENV_CPU, _cores),
    ("memory", names.ENV_MEMORY_MIB, _mib),
    (GPU_RESOURCE, names.ENV_GPU, _count),
)


def resource_env(resources: Mapping[str, str]) -> dict[str, str]:
    """The ``FLEXJOB_CPU`` / ``FLEXJOB_MEMORY_MIB`` / ``FLEXJOB_GPU`` variables of a replica with
    these requests (only those set and valid), so that a local process sees what it was given."""
    env: dict[str, str] = {}
    for key, var, parse in _RESOURCE_ENV:
        if key in resources:
            try:
                env[var] = parse(resources[key])
            except ValueError:
                log.warning("replica resource %s=%r is not a quantity", key, resources[key])
    return env


def _replica(row: tuple[Any, ...], home: Path) -> Replica:
    ns, name, job, rtype, idx, uid, phase, code, _pid, _owner, address, node, created = row[:13]
    labels, log_file, deleting = row[13:]
    failed = phase == ReplicaPhase.FAILED.value
    message = log_tail(log_file) if failed and log_file else ""
    finished = phase in (ReplicaPhase.FAILED.value, ReplicaPhase.SUCCEEDED.value)
    exits = job_dir(home, ns, job) / "exits" / uid
    return Replica(
        namespace=ns,
        job=job,
        name=name,
        type=ReplicaType(rtype),
        index=idx,
        phase=ReplicaPhase(phase),
        uid=uid,
        exit_code=code,
        address=address,
        node=node,
        created=datetime.fromtimestamp(created, UTC),
        labels=json.loads(labels),
        deleting=bool(deleting),
        message=message,
        reason=memory_limits.exit_reason(exits, failed, message) if finished else "",
    )


class LocalRuntime:
    def __init__(self, db: Database, home: Path) -> None:
        self.db = db
        self.home = home
        self._children: dict[tuple[str, str], Popen[bytes]] = {}
        self._lock = threading.RLock()

    # --- replicas ------------------------------------------------------------------------------
    def exit_file(self, namespace: str, job: str, uid: str) -> Path:
        return job_dir(self.home, namespace, job) / "exits" / uid

    def create_replica(self, req: ReplicaRequest) -> Replica:
        path = log_path(self.home, req.namespace, req.job, req.short_name)
        uid = str(uuid.uuid4())
        address = self._service_address(req.namespace, req.service) if req.service else None
        with self.db.transaction() as conn:
            if conn.execute(
                "SELECT 1 FROM replicas WHERE namespace=? AND name=?", (req.namespace, req.name)
            ).fetchone():
                raise AlreadyExistsError(f"replica {req.namespace}/{req.name} already exists")
            conn.execute(
                f"INSERT INTO replicas ({_COLUMNS}) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?, ?, ?, ?, 0)",
                (
                    req.namespace,
                    req.name,
                    req.job,
                    req.type.value,
                    req.index,
                    uid,
                    ReplicaPhase.PENDING.value,
                    os.getpid(),
                    address,
                    req.node or LOCAL_NODE,
                    time.time(),
                    json.dumps(dict(req.labels)),
                    str(path),
                ),
            )
        argv = own_interpreter([*req.command, *req.args])
        try:
            if not argv:
                raise OSError("the replica's container has no command or args to run")
            env = {**resource_env(req.resources), **req.env}
            exits = self.exit_file(req.namespace, req.job, uid)
            limit = memory_limits.enforce(
                memory_limits.memory_limit_bytes(req.template), exits, uid
            )
            keep = names.MASTER_KEEPS_ENV if req.type is MASTER_TYPE else ()
            proc = processes.spawn(
                argv, env, path, exits, req.working_dir, limit.cgroup, limit.rlimit_bytes, keep
            )
        except OSError as exc:
            memory_limits.release(self.exit_file(req.namespace, req.job, uid))
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a") as out:
                out.write(f"flexjob: cannot start {argv!r}: {exc}\n")
            self._set_exit(req.namespace, req.name, 127)
            return self._get(req.namespace, req.name)
        with self._lock:
            self._children[(req.namespace, req.name)] = proc
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE replicas SET pid=?, phase=? WHERE namespace=? AND name=?",
                (proc.pid, ReplicaPhase.RUNNING.value, req.namespace, req.name),
            )
        return self._get(req.namespace, req.name)

    def _set_exit(self, namespace: str, name: str, code: int | None) -> None:
        phase = ReplicaPhase.SUCCEEDED if code == 0 else ReplicaPhase.FAILED
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE replicas SET phase=?, exit_code=? WHERE namespace=? AND name=?",
                (phase.value, code, namespace, name),
            )

    def pid(self, namespace: str, name: str) -> int | None:
        """The process id of a replica (its wrapper's), None before it started."""
        with self.db.reading() as conn:
            row = conn.execute(
                "SELECT pid FROM replicas WHERE namespace=? AND name=?", (namespace, name)
            ).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def _get(self, namespace: str, name: str) -> Replica:
        with self.db.reading() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM replicas WHERE namespace=? AND name=?", (namespace, name)
            ).fetchone()
        if row is None:
            raise NotFoundError(f"replica {namespace}/{name} not found")
        return _replica(row, self.home)

    def refresh(self) -> None:
        """Record the exit of our children, and of other active replicas whose process is gone
        and whose owner is gone or is us (adopted): from their exit file."""
        with self._lock:
            exited = [
                (key, p.returncode) for key, p in self._children.items() if p.poll() is not None
            ]
            exited_procs = [self._children.pop(key) for key, _ in exited]
            mine = set(self._children)
        for (ns, name), returncode in exited:
            self._set_exit(ns, name, processes.exit_code(returncode))
        for proc in exited_procs:
            processes.kill_leftovers(proc.pid)
            memory_limits.release(processes.exit_file_of(proc))
        me = os.getpid()
        with self.db.reading() as conn:
            others = conn.execute(
                "SELECT namespace, name, job, uid, pid, owner_pid, created FROM replicas "
                "WHERE phase IN (?, ?)",
                _ACTIVE,
            ).fetchall()
        for ns, name, job, uid, pid, owner, created in others:
            if (ns, name) in mine or (owner != me and processes.alive(owner)):
                continue
            if pid is None and owner == me:  # being started by another thread of ours
                continue
            if pid is not None and processes.alive(pid, created):
                continue
            code = processes.read_exit(self.exit_file(ns, job, uid))
            if code is None:
                log.warning("replica %s/%s lost its owner process and is gone", ns, name)
            self._set_exit(ns, name, code)
            memory_limits.release(self.exit_file(ns, job, uid))

    def adopt(self, namespace: str, job: str) -> list[str]:
        """Become the owner of ``job``'s active replicas whose owner process is gone (a killed
        operator); their exits are then read from their exit files. The names adopted."""
        me = os.getpid()
        with self.db.reading() as conn:
            rows = conn.execute(
                "SELECT name, pid, owner_pid FROM replicas WHERE namespace=? AND job=? "
                "AND phase IN (?, ?) AND owner_pid != ?",
                (namespace, job, *_ACTIVE, me),
            ).fetchall()
        orphans = [(name, pid) for name, pid, owner in rows if not processes.alive(owner)]
        for name, pid in orphans:
            if pid is None:  # its owner died before starting it: it never ran
                self._set_exit(namespace, name, None)
        with self.db.transaction() as conn:
            for name, _ in orphans:
                conn.execute(
                    "UPDATE replicas SET owner_pid=? WHERE namespace=? AND name=? "
                    "AND pid IS NOT NULL",
                    (me, namespace, name),
                )
        self.refresh()
        return [name for name, pid in orphans if pid is not None]

    def delete_replica(self, namespace: str, name: str) -> None:
        with self._lock:
            proc = self._children.pop((namespace, name), None)
        with self.db.transaction() as conn:
            row = conn.execute(
                "SELECT pid, phase, created, job, uid FROM replicas WHERE namespace=? AND name=?",
                (namespace, name),
            ).fetchone()
            conn.execute(
                "UPDATE replicas SET deleting=1 WHERE namespace=? AND name=?", (namespace, name)
            )
        if proc is not None:
            processes.stop_child(proc)
        elif row is not None and row[0] is not None and row[1] in _ACTIVE:
            processes.stop_pid(row[0], row[2])
        if row is not None:
            memory_limits.release(self.exit_file(namespace, row[3], row[4]))
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM replicas WHERE namespace=? AND name=?", (namespace, name))

    def list_replicas(self, namespace: str | None, job: str | None = None) -> list[Replica]:
        self.refresh()
        rows = self._select("replicas", _COLUMNS, namespace, job, "created, name")
        return [_replica(row, self.home) for row in rows]

    def stop_children(self) -> None:
        """Stop every replica this process started (on shutdown), all at once with one grace
        period; rows keep their exit."""
        with self._lock:
            children = dict(self._children)
            self._children.clear()
        codes = processes.stop_children(list(children.values()))
        for (ns, name), code in zip(children, codes, strict=True):
            self._set_exit(ns, name, code)
        for proc in children.values():
            memory_limits.release(processes.exit_file_of(proc))

    # --- services ------------------------------------------------------------------------------
    def _service_address(self, namespace: str, name: str) -> str | None:
        with self.db.reading() as conn:
            row = conn.execute(
                "SELECT address FROM services WHERE namespace=? AND name=?", (namespace, name)
            ).fetchone()
        return None if row is None else str(row[0])

    def create_service(self, req: ServiceRequest) -> Service:
        address = f"127.0.0.1:{free_port()}"
        try:
            with self.db.transaction() as conn:
                conn.execute(
                    "INSERT INTO services VALUES (?, ?, ?, ?, ?)",
                    (req.namespace, req.name, req.job, req.replica, address),
                )
        except sqlite3.IntegrityError as exc:
            raise AlreadyExistsError(f"service {req.namespace}/{req.name} already exists") from exc
        return Service(req.namespace, req.job, req.name, req.replica, address)

    def delete_service(self, namespace: str, name: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM services WHERE namespace=? AND name=?", (namespace, name))

    def list_services(self, namespace: str | None, job: str | None = None) -> list[Service]:
        rows = self._select("services", "namespace, job, name, replica, address", namespace, job)
        return [Service(*row) for row in rows]

    def _select(
        self, table: str, columns: str, namespace: str | None, job: str | None, order: str = "name"
    ) -> list[Any]:
        """``columns`` of the rows of ``table`` in ``namespace`` (all when ``None``) and of
        ``job`` (all when ``None``), by ``order``."""
        where = {"namespace": namespace, "job": job}
        args = [value for value in where.values() if value is not None]
        query = f"SELECT {columns} FROM {table} WHERE 1=1"
        query += "".join(f" AND {k}=?" for k, v in where.items() if v is not None)
        with self.db.reading() as conn:
            return conn.execute(f"{query} ORDER BY {order}", args).fetchall()

    # --- logs ----------------------------------------------------------------------------------
    def log_file(self, namespace: str, replica: str) -> Path:
        """The log of ``replica`` (its full name), also after the replica was deleted."""
        with self.db.reading() as conn:
            row = conn.execute(
                "SELECT log_path FROM replicas WHERE namespace=? AND name=?", (namespace, replica)
            ).fetchone()
        if row is not None:
            return Path(row[0])
        for path in sorted((jobs_root(self.home) / namespace).glob("*/logs/*.log")):
            if f"{path.parent.parent.name}-{path.stem}" == replica:
                return path
        raise NotFoundError(f"no log for replica {namespace}/{replica}")

    def read_logs(
        self,
        namespace: str,
        replica: str,
        follow: bool = False,
        timeout: float | None = None,
        options: LogOptions = ALL_LINES,
    ) -> Iterator[str]:
        if options.previous:
            raise InvalidSpecError(
                "--previous: the local platform keeps one log per replica, every restart's "
                "output appended to it: leave --previous out to read them all"
            )
        if options.since_seconds is not None:
            raise InvalidSpecError(
                "--since: the local platform's logs carry no times; use --tail N instead"
            )
        path = self.log_file(namespace, replica)
        deadline = None if timeout is None else time.monotonic() + timeout
        with path.open("r", errors="replace") as src:
            if options.tail_lines is not None:
                tail = options.tail_lines
                yield from deque(src, maxlen=tail) if tail > 0 else ()
            while True:
                line = src.readline()
                if line:
                    yield line
                    continue
                if not follow or (deadline is not None and time.monotonic() > deadline):
                    return
                if not self._active(namespace, replica):
                    rest = src.read()
                    if rest:
                        yield rest
                    return
                time.sleep(0.1)

    def _active(self, namespace: str, name: str) -> bool:
        self.refresh()
        with self.db.reading() as conn:
            row = conn.execute(
                "SELECT phase FROM replicas WHERE namespace=? AND name=?", (namespace, name)
            ).fetchone()
        return row is not None and row[0] in _ACTIVE

    def job_logs_dir(self, namespace: str, job: str) -> Path:
        return job_dir(self.home, namespace, job) / "logs"
