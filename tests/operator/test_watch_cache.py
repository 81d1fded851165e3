"""The operator's watch cache: a pass sees what the watches and its own writes saw, and an
object is only ever replaced by a newer state of itself."""

from flexjob.api import ElasticJob, JobPhase, ReplicaPhase, ReplicaType
from flexjob.operator.watch_cache import WatchCache
from flexjob.platform.contract import Replica

KEY = ("default", "mnist")


def pod(index: int, uid: str, phase: ReplicaPhase = ReplicaPhase.PENDING) -> Replica:
    name = f"mnist-worker-{index}"
    return Replica("default", "mnist", name, ReplicaType.WORKER, index, phase, uid=uid)


def job(version: str, uid: str = "j1", replicas: int = 2) -> ElasticJob:
    return ElasticJob.model_validate(
        {
            "metadata": {"name": "mnist", "uid": uid, "resourceVersion": version},
            "spec": {"replicaSpecs": {"worker": {"replicas": replicas}}},
        }
    )


def pods_of(cache: WatchCache) -> dict[str, tuple[str, ReplicaPhase]]:
    seen = cache.read(KEY)
    assert seen is not None
    return {r.name: (r.uid, r.phase) for r in seen[1]}


def test_a_job_is_read_from_the_cache_only_once_a_pass_primed_it() -> None:
    cache = WatchCache()
    listed_at = cache.clock()
    cache.pod_seen(KEY, pod(0, "a"), "5", deleted=False)  # created while the list was sent
    assert cache.read(KEY) is None  # events from before the watch caught up may be missing
    cache.prime(KEY, [pod(1, "b")], [], [], listed_at)
    assert pods_of(cache) == {
        "mnist-worker-0": ("a", ReplicaPhase.PENDING),
        "mnist-worker-1": ("b", ReplicaPhase.PENDING),
    }


def test_a_pod_a_pass_created_is_seen_before_its_watch_event() -> None:
    cache = WatchCache()
    cache.prime(KEY, [], [], [], cache.clock())
    cache.created(KEY, pod(0, "a"))
    assert pods_of(cache) == {"mnist-worker-0": ("a", ReplicaPhase.PENDING)}
    cache.pod_seen(KEY, pod(0, "a", ReplicaPhase.RUNNING), "7", deleted=False)
    cache.created(KEY, pod(0, "a"))  # the create's answer, late: older than the watch's
    assert pods_of(cache) == {"mnist-worker-0": ("a", ReplicaPhase.RUNNING)}


def test_an_older_state_of_a_pod_never_replaces_a_newer_one() -> None:
    cache = WatchCache()
    cache.prime(KEY, [], [], [], cache.clock())
    cache.pod_seen(KEY, pod(0, "a", ReplicaPhase.FAILED), "9", deleted=False)
    cache.pod_seen(KEY, pod(0, "a", ReplicaPhase.RUNNING), "8", deleted=False)
    assert pods_of(cache) == {"mnist-worker-0": ("a", ReplicaPhase.FAILED)}


def test_a_deleted_pod_does_not_come_back_from_a_late_event_or_list() -> None:
    cache = WatchCache()
    cache.pod_seen(KEY, pod(0, "a"), "5", deleted=False)
    cache.pod_seen(KEY, pod(0, "a"), "6", deleted=True)
    # listed before the delete, folded in after it
    cache.prime(KEY, [pod(0, "a")], [], [], cache.clock())
    cache.pod_seen(KEY, pod(0, "a", ReplicaPhase.RUNNING), "5", deleted=False)
    cache.created(KEY, pod(0, "a"))
    assert pods_of(cache) == {}
    cache.created(KEY, pod(0, "b"))  # the same name again: a new incarnation
    assert pods_of(cache) == {"mnist-worker-0": ("b", ReplicaPhase.PENDING)}


def test_the_job_is_the_newest_version_seen_or_written_and_gone_once_forgotten() -> None:
    cache = WatchCache()
    cache.prime(KEY, [], [], [], cache.clock())
    cache.job_seen(job("10", replicas=3))
    cache.job_written(job("12", replicas=4))
    cache.job_seen(job("11", replicas=5))  # the watch catching up with an older version
    seen = cache.read(KEY)
    assert seen is not None and seen[0] is not None
    assert seen[0].spec.replica_specs[ReplicaType.WORKER].replicas == 4
    cache.job_seen(job("13", uid="j2", replicas=1))  # deleted and created again: a new job
    seen = cache.read(KEY)
    assert seen is not None and seen[0] is not None and seen[0].metadata.uid == "j2"
    cache.forget(KEY)
    assert cache.read(KEY) is None


def test_a_relist_drops_what_was_deleted_while_no_watch_said_so() -> None:
    now = [0.0]
    cache = WatchCache(relist_after=60, clock=lambda: now[0])
    cache.prime(KEY, [pod(0, "a"), pod(1, "b")], [], [], listed_at=0.0)
    now[0] = 30.0
    assert set(pods_of(cache)) == {"mnist-worker-0", "mnist-worker-1"}  # read from memory
    now[0] = 61.0
    assert cache.read(KEY) is None  # time to list again
    listed_at = now[0]
    now[0] = 61.5
    cache.created(KEY, pod(2, "c"))  # created while the list was on its way: not in it
    cache.prime(KEY, [pod(0, "a")], [], [], listed_at)  # worker-1 went during a watch gap
    assert set(pods_of(cache)) == {"mnist-worker-0", "mnist-worker-2"}


def test_once_the_pod_watch_listed_a_new_job_is_read_from_the_watches() -> None:
    now = [0.0]
    cache = WatchCache(relist_after=60, clock=lambda: now[0])
    cache.pod_seen(KEY, pod(0, "a"), "5", deleted=False)  # from the pod watch's list
    assert cache.read(KEY) is None  # before it listed everything: the pass lists
    cache.watching()
    assert pods_of(cache) == {"mnist-worker-0": ("a", ReplicaPhase.PENDING)}
    now[0] = 61.0
    assert cache.read(KEY) is None  # and lists after relist_after, as every job
    cache.forget(KEY)  # gone, or unreadable: its next pass lists
    assert cache.read(KEY) is None
    cache.prime(KEY, [], [], [], now[0])
    assert pods_of(cache) == {}


def test_a_status_patch_in_flight_is_what_the_next_pass_reads() -> None:
    cache = WatchCache()
    cache.prime(KEY, [], [], [], cache.clock())
    cache.job_seen(job("7"))
    cache.status_sent(KEY, {"phase": "Starting", "restartCount": 1}, write=1)
    cache.status_sent(KEY, {"phase": "Running"}, write=2)  # sent after it: applied after it
    seen = cache.read(KEY)
    assert seen is not None and seen[0] is not None and seen[0].status is not None
    assert (seen[0].status.phase.value, seen[0].status.restart_count) == ("Running", 1)
    stored = job("8")
    stored.status = seen[0].status.model_copy(update={"phase": JobPhase.STARTING})
    cache.status_answered(KEY, 1, stored)  # write 1 stored; write 2 still on its way
    seen = cache.read(KEY)
    assert seen is not None and seen[0] is not None and seen[0].status is not None
    assert seen[0].status.phase is JobPhase.RUNNING
    cache.status_answered(KEY, 2, None)  # refused: what is stored is the truth again
    seen = cache.read(KEY)
    assert seen is not None and seen[0] is not None and seen[0].status is not None
    assert seen[0].status.phase is JobPhase.STARTING
