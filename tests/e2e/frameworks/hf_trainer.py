"""HF Transformers' ``Trainer`` on a tiny BERT built from a config (no download: run with
``HF_HUB_OFFLINE=1``), data made here. Nothing flexjob in it. Prints one
``hf-trainer: rank=R world=W steps=K`` line per rank.
"""

import os
import tempfile

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class Tokens(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __init__(self, n: int) -> None:
        gen = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, 32, (n, 8), generator=gen)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        ids = self.ids[i]
        return {"input_ids": ids, "labels": (ids.sum() % 2).long()}


def main() -> None:
    config = BertConfig(
        vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=16, num_labels=2,
    )  # fmt: skip
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(prefix="hf-trainer-"),
        max_steps=4,
        per_device_train_batch_size=4,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        logging_steps=1,
        ddp_backend="gloo",
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=Tokens(64))
    result = trainer.train()
    print(
        f"hf-trainer: rank={args.process_index} world={args.world_size} "
        f"steps={result.global_step} run_id={os.environ.get('TORCHELASTIC_RUN_ID')}",
        flush=True,
    )


if __name__ == "__main__":
    main()
