"""The local platform's cluster-scoped objects (DI's ``AggregatorConfig``): the
``cluster_objects`` table, one JSON document per kind and name. What they mean is
``core.operator.logic_learners``; ``flexjob apply`` writes them."""

import json
import time
from collections.abc import Mapping
from typing import Any

from flexjob.api.errors import InvalidSpecError
from flexjob.platform.local.db import Database


class LocalClusterObjects:
    def __init__(self, db: Database) -> None:
        self.db = db

    def apply_cluster_object(self, body: Mapping[str, Any]) -> bool:
        kind = body.get("kind")
        name = (body.get("metadata") or {}).get("name")
        if not isinstance(kind, str) or not kind or not isinstance(name, str) or not name:
            raise InvalidSpecError(f"kind, metadata.name: both required, got {kind!r}, {name!r}")
        with self.db.transaction() as conn:
            found = conn.execute(
                "SELECT 1 FROM cluster_objects WHERE kind = ? AND name = ?", (kind, name)
            ).fetchone()
            conn.execute(
                "INSERT OR REPLACE INTO cluster_objects (kind, name, body, updated) "
                "VALUES (?, ?, ?, ?)",
                (kind, name, json.dumps(dict(body)), time.time()),
            )
        return found is None

    def list_cluster_objects(self, kind: str) -> list[dict[str, Any]]:
        with self.db.reading() as conn:
            rows = conn.execute(
                "SELECT body FROM cluster_objects WHERE kind = ? ORDER BY name", (kind,)
            ).fetchall()
        return [json.loads(body) for (body,) in rows]

    def delete_cluster_object(self, kind: str, name: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM cluster_objects WHERE kind = ? AND name = ?", (kind, name))
