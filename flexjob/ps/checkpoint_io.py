"""PS checkpoint files: one ``ps-<index>-of-<num_ps>.npz`` per PS in the job's PS checkpoint
directory, written atomically (temp file, fsync, rename), read back as ``PsSnapshot``s.

The file is a plain numpy ``.npz`` (no pickle): ``meta`` (JSON: index, num_ps, version,
optimizer, table specs) and one array per row / slot / step / dense field, so any PS set, of
any size, reads any other's files. ``latest_set`` picks the complete set in a directory whose
oldest file is the newest; ``read_set`` reads the set of one size.
"""

import json
import os
import re
from dataclasses import asdict
from pathlib import Path

import numpy as np

from flexjob.core.ps.checkpoint import DenseExport, PsSnapshot
from flexjob.core.ps.optim import OptimizerKind, OptimizerSpec
from flexjob.core.ps.table import RowsExport, TableSpec

_NAME = re.compile(r"^ps-(\d+)-of-(\d+)\.npz$")


def file_name(index: int, num_ps: int) -> str:
    return f"ps-{index}-of-{num_ps}.npz"


def write_snapshot(directory: Path, snap: PsSnapshot) -> Path:
    """Write ``snap`` to ``directory``; readers see the old file or the new one, never half."""
    directory.mkdir(parents=True, exist_ok=True)
    meta = {
        "index": snap.index,
        "num_ps": snap.num_ps,
        "version": snap.version,
        "optimizer": asdict(snap.optimizer),
        "tables": [asdict(t) for t in snap.tables],
        "slots": {name: sorted(r.slots) for name, r in snap.rows.items()},
        "dense": {name: sorted(d.slots) for name, d in snap.dense.items()},
    }
    arrays: dict[str, np.ndarray] = {"meta": np.frombuffer(json.dumps(meta).encode(), np.uint8)}
    for name, r in snap.rows.items():
        arrays[f"rows/{name}/ids"] = r.ids
        arrays[f"rows/{name}/rows"] = r.rows
        arrays[f"rows/{name}/steps"] = r.steps
        for slot, values in r.slots.items():
            arrays[f"rows/{name}/slot/{slot}"] = values
    for name, d in snap.dense.items():
        arrays[f"dense/{name}/value"] = d.value
        arrays[f"dense/{name}/steps"] = d.steps
        for slot, values in d.slots.items():
            arrays[f"dense/{name}/slot/{slot}"] = values
    final = directory / file_name(snap.index, snap.num_ps)
    temp = directory / f".{final.name}.{os.getpid()}.tmp"
    with temp.open("wb") as f:
        np.savez(f, allow_pickle=False, **arrays)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temp, final)
    return final


def read_snapshot(path: Path) -> PsSnapshot:
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(bytes(z["meta"]).decode())
        opt = dict(meta["optimizer"])
        opt["kind"] = OptimizerKind(opt["kind"])
        rows = {
            name: RowsExport(
                z[f"rows/{name}/ids"],
                z[f"rows/{name}/rows"],
                {s: z[f"rows/{name}/slot/{s}"] for s in slots},
                z[f"rows/{name}/steps"],
            )
            for name, slots in meta["slots"].items()
        }
        dense = {
            name: DenseExport(
                z[f"dense/{name}/value"],
                {s: z[f"dense/{name}/slot/{s}"] for s in slots},
                z[f"dense/{name}/steps"],
            )
            for name, slots in meta["dense"].items()
        }
    return PsSnapshot(
        index=int(meta["index"]),
        num_ps=int(meta["num_ps"]),
        version=int(meta["version"]),
        optimizer=OptimizerSpec(**opt),
        tables=tuple(TableSpec(**t) for t in meta["tables"]),
        rows=rows,
        dense=dense,
    )


def latest_set(directory: Path) -> list[PsSnapshot]:
    """The snapshots of the newest complete PS set in ``directory`` (every index of one
    size present), or ``[]`` when there is none."""
    if not directory.is_dir():
        return []
    sets: dict[int, dict[int, Path]] = {}
    for path in directory.iterdir():
        m = _NAME.match(path.name)
        if m:
            sets.setdefault(int(m.group(2)), {})[int(m.group(1))] = path
    complete = [(n, files) for n, files in sets.items() if sorted(files) == list(range(n))]
    if not complete:
        return []
    # The set written most recently in full: the newest oldest file (a set of one size whose
    # files come from two different times, e.g. after a change back and forth, loses).
    _, files = max(complete, key=lambda c: min(p.stat().st_mtime_ns for p in c[1].values()))
    return [read_snapshot(files[i]) for i in sorted(files)]


def read_set(directory: Path, num_ps: int) -> list[PsSnapshot]:
    """The snapshots ``ps-<i>-of-<num_ps>.npz`` for every ``i``; ``FileNotFoundError``
    naming the first missing file."""
    return [read_snapshot(directory / file_name(i, num_ps)) for i in range(num_ps)]
