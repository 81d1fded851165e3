"""A CTR worker: trains DeepFM on the synthetic data set against the job's parameter servers,
reading dynamic shards from the job master, then prints the held-out AUC beside the
ground-truth model's AUC.

Run as a PS job's worker (``flexjob submit examples/specs/ctr.yaml`` or
``flexjob run --ps 2 --nnodes 2 examples/ctr/train.py``): the PS set comes from
``FLEXJOB_PS_ADDRESSES`` or the master. ``--shard-log`` records each shard this worker
reports done, with its sample indices, then the master's answer (for tests that check every
sample); ``--result`` writes the AUCs as JSON.
"""

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ctr_data
from deepfm import DeepFM

from flexjob.core.ps.optim import OptimizerKind, OptimizerSpec
from flexjob.trainer.link import MasterLink, replica_link
from flexjob.trainer.ps_set import PsSet
from flexjob.trainer.ps_torch import PsSync
from flexjob.trainer.sampler import ElasticSampler, NoShard, ShardSamples


class RecordingSource:
    """The master's shards, recording each report in two lines: ``reporting <shard> <sample
    indices>`` before asking, then ``accepted <shard>`` or ``rejected <shard>``. A worker killed
    between the two leaves a report without an answer; the master may have accepted it."""

    def __init__(self, link: MasterLink, log: Path | None) -> None:
        self.link = link
        self.log = log
        self.indices: dict[int, list[int]] = {}

    def register_dataset(self, params):  # type: ignore[no-untyped-def]
        self.link.register_dataset(params)

    def get_shard(self, dataset: str) -> ShardSamples | NoShard:
        got = self.link.get_shard(dataset)
        if isinstance(got, ShardSamples):
            self.indices[got.shard_id] = list(got.indices)
        return got

    def report_shard(self, dataset: str, shard_id: int) -> bool:
        indices = self.indices.pop(shard_id, [])
        self._record("reporting", shard_id, *indices)
        accepted = self.link.report_shard(dataset, shard_id)
        self._record("accepted" if accepted else "rejected", shard_id)
        return accepted

    def report_shards(self, dataset: str, shard_ids: Sequence[int]) -> list[bool]:
        return [self.report_shard(dataset, s) for s in shard_ids]

    def _record(self, *words: object) -> None:
        if self.log is not None:
            with self.log.open("a") as f:  # one write per line: workers share the file
                f.write(" ".join(map(str, words)) + "\n")


def evaluate(model: DeepFM, data: ctr_data.CtrData, chunk: int = 8192) -> float:
    model.eval()
    scores = []
    with torch.no_grad():
        for start in range(0, len(data), chunk):
            ids = torch.from_numpy(data.ids[start : start + chunk])
            scores.append(model(ids).numpy())
    model.train()
    return ctr_data.auc(np.concatenate(scores), data.labels)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--train-size", type=int, default=200_000)
    p.add_argument("--test-size", type=int, default=40_000)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--shard-size", type=int, default=8192)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shard-log", type=Path, default=None)
    p.add_argument("--result", type=Path, default=None)
    p.add_argument("--step-delay", type=float, default=0.0, help="Seconds to wait per step.")
    p.add_argument(
        "--defer-push",
        action="store_true",
        help="Send a step's row gradients with the next step's lookup (fewer round trips; "
        "other workers see them a step late, which can cost accuracy with several workers).",
    )
    args = p.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    train, test = ctr_data.splits(args.train_size, args.test_size, args.seed)
    ps = PsSet.from_env()
    model = DeepFM(ps, len(ctr_data.VOCABS), ctr_data.TOTAL_VOCAB, defer_push=args.defer_push)
    sync = PsSync(ps, model, OptimizerSpec(OptimizerKind.ADAM, lr=args.lr))
    sync.configure()
    sampler = ElasticSampler(
        batch_size=args.batch_size,
        dataset="ctr",
        size=len(train),
        shard_size=args.shard_size,
        epochs=args.epochs,
        seed=args.seed,
    )
    sampler.bind(RecordingSource(replica_link(), args.shard_log))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    started, samples = time.monotonic(), 0
    for batch in sampler:  # each batch committed when the next is asked for
        idx = np.asarray(batch.indices)
        logits = model(torch.from_numpy(train.ids[idx]))
        loss = loss_fn(logits, torch.from_numpy(train.labels[idx]))
        loss.backward()
        sync.step(final=batch.last)  # a shard's gradients are on the PS before it is done
        samples += idx.size
        if args.step_delay:
            time.sleep(args.step_delay)
    sync.finish()
    elapsed = time.monotonic() - started
    sync.pull(everything=True)
    model_auc = evaluate(model, test)
    truth_auc = ctr_data.auc(test.probs, test.labels)
    result = {
        "worker": os.environ.get("FLEXJOB_REPLICA_INDEX", "0"),
        "auc": model_auc,
        "ground_truth_auc": truth_auc,
        "ratio": model_auc / truth_auc,
        "samples": samples,
        "samples_per_second": samples / elapsed if elapsed > 0 else 0.0,
    }
    print(
        f"AUC model={model_auc:.4f} ground-truth={truth_auc:.4f} "
        f"ratio={model_auc / truth_auc:.4f} samples={samples} "
        f"samples/s={result['samples_per_second']:.0f}",
        flush=True,
    )
    if args.result is not None:
        args.result.write_text(json.dumps(result))
    ps.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
