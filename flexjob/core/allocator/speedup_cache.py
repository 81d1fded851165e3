"""Jobs' speedup curves, kept across rounds and computed many jobs at once.

For: a policy that reads each job's ``speedup(min_nodes(n), n)`` for every count ``n`` it may
give, every round (``fair_goodput``). Not for: the model behind a speedup
(``goodput_model``) or choosing counts (policies).

A job's curve is kept while its speedup holds: the same ``GoodputModel`` by value (a job that
reports the same profilings again, as the live Allocator rebuilds them each round, keeps its
curve), or the same callable. A curve that is too short for this round is extended by the
counts it lacks; a job whose model changed gets a new one. Every job whose speedup is a
``GoodputModel``'s is computed in one numpy call (``goodput_model.speedups``), whose values
equal ``speedup``'s bit for bit: the cache changes how fast a round is, never what it decides.
Any other callable is called point by point.

Cost measured on the held-out workload (``benchmarks/scheduler.py``): a round where many jobs
report new models had computed each curve point by point, 13 goodput evaluations a point -
the rounds over 10 ms; one batched call per round takes them under it.
"""

from collections.abc import Iterable

from flexjob.core.allocator.contract import JobInfo, SpeedupFn, linear_speedup
from flexjob.core.allocator.placement import min_nodes_for
from flexjob.core.training.goodput_model import GoodputModel, model_of, speedups

#: A shape: (nodes, replicas).
Shape = tuple[int, int]


class Curve:
    """One job's speedups: ``at(k, n)`` for any shape; ``curve[n]`` on the fewest nodes."""

    __slots__ = ("curve", "key", "per_node", "points", "speedup")

    def __init__(self, key: object, per_node: int, speedup: SpeedupFn = linear_speedup) -> None:
        self.key = key
        self.per_node = per_node
        self.speedup = speedup
        #: ``speedup(min_nodes(n), n)`` for ``n`` in ``0..len - 1`` (0 for ``n = 0``).
        self.curve: list[float] = [0.0]
        #: Other shapes: (nodes, replicas) -> speedup.
        self.points: dict[Shape, float] = {}

    def on_curve(self, shape: Shape) -> bool:
        k, n = shape
        return n > 0 and min_nodes_for(n, self.per_node) == k

    def at(self, num_nodes: int, num_replicas: int) -> float:
        """``speedup(num_nodes, num_replicas)``, computed once."""
        shape = (num_nodes, num_replicas)
        if num_replicas < len(self.curve) and self.on_curve(shape):
            return self.curve[num_replicas]
        value = self.points.get(shape)
        if value is None:
            value = self.speedup(num_nodes, num_replicas)
            self.points[shape] = value
        return value


class SpeedupCache:
    """Curves by job id, kept across rounds; see the module docstring."""

    def __init__(self) -> None:
        self._curves: dict[str, Curve] = {}

    def curves(self, wanted: Iterable[tuple[JobInfo, int, int, Shape | None]]) -> dict[str, Curve]:
        """Each ``(job, per_node, top, shape)``'s curve: counts ``0..top`` on the fewest nodes
        of ``per_node`` replicas each, and ``shape`` when given."""
        out: dict[str, Curve] = {}
        batch: list[tuple[Curve, GoodputModel, list[Shape], bool]] = []
        for job, per_node, top, shape in wanted:
            model = model_of(job.speedup)
            key = model if model is not None else job.speedup
            cached = self._curves.get(job.id)
            if cached is None or cached.per_node != per_node or not _same(cached.key, key):
                cached = self._curves[job.id] = Curve(key, per_node, job.speedup)
            cached.speedup = job.speedup
            out[job.id] = cached
            missing = [(min_nodes_for(n, per_node), n) for n in range(len(cached.curve), top + 1)]
            extra = (
                shape is not None
                and shape[1] > 0
                and shape not in cached.points
                and not (cached.on_curve(shape) and shape[1] <= top)
            )
            if model is None:
                cached.curve.extend(job.speedup(k, n) for k, n in missing)
                if shape is not None and extra:
                    cached.at(*shape)
            elif missing or extra:
                wanted_shapes = missing + ([shape] if shape is not None and extra else [])
                batch.append((cached, model, wanted_shapes, extra))
        values = speedups([(m, [k for k, _ in s], [n for _, n in s]) for _, m, s, _ in batch])
        for (cached, _, shapes, extra), got in zip(batch, values, strict=True):
            if extra:
                cached.points[shapes[-1]] = got.pop()
            cached.curve.extend(got)
        return out

    def retain(self, ids: Iterable[str]) -> None:
        """Forget every job but these (jobs gone from the cluster)."""
        keep = set(ids)
        self._curves = {k: v for k, v in self._curves.items() if k in keep}


def _same(cached: object, key: object) -> bool:
    return cached is key or cached == key
