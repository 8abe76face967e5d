"""The transformers Trainer the tests' writer scripts train in a process of their own (steptable's readers are then
tested on what transformers itself writes): a GPT-2 of one small layer built from its config, on random tokens."""

from __future__ import annotations

from typing import Any


def tiny_trainer(torch_seed: int = 0, /, rows: int = 32, eval_rows: int = 0, **args: Any) -> Any:
    """A ``Trainer`` of the tiny GPT-2 (its weights and data drawn after ``torch.manual_seed(torch_seed)``) on
    ``rows`` random sequences of 8 tokens (the first ``eval_rows`` its evaluation set), its ``TrainingArguments``
    ``args`` (``seed`` among them) with CPU, no progress bar and batches of 4."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    torch.manual_seed(torch_seed)
    ids = torch.randint(0, 32, (rows, 8))
    data = [{"input_ids": x, "labels": x} for x in ids]
    model = GPT2LMHeadModel(GPT2Config(vocab_size=32, n_positions=8, n_embd=8, n_layer=1, n_head=1,
                                       bos_token_id=0, eos_token_id=0))
    args = TrainingArguments(**{"per_device_train_batch_size": 4, "use_cpu": True, "disable_tqdm": True, **args})
    return Trainer(model=model, args=args, train_dataset=data, eval_dataset=data[:eval_rows] if eval_rows else None)
