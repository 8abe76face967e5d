"""Shared by the adapter tests: a run's rows and description as the adapters left them on disk, and the tiny HF
trainer (a GPT-2 made from a config: nothing downloaded) that test_hf and bench/bench_integrations.py train."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def rows_of(run_dir: Path) -> list[dict[str, Any]]:
    """The JSONL rows a run wrote, in order."""
    path = run_dir / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def info_of(run_dir: Path, arm: str | None = None) -> dict[str, Any]:
    """The run's steptable.json (steptable.<arm>.json for an arm)."""
    name = "steptable.json" if arm is None else f"steptable.{arm}.json"
    return dict(json.loads((run_dir / name).read_text(encoding="utf-8")))


def close_enough(a: Any, b: Any) -> bool:
    """Values equal as the JSONL keeps them (floats to their repr, so exactly, ints as ints)."""
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-12, abs=0)
    return bool(a == b)


def tiny_trainer(out: Any, callbacks: list[Any], max_steps: int = 20, logging_steps: int = 5, eval_steps: int = 10,
                 run_name: str | None = None, model: Any = None) -> Any:
    """A transformers.Trainer of a 1-layer GPT-2 on random tokens (CPU, seconds)."""
    import torch
    from transformers import GPT2LMHeadModel, Trainer, TrainingArguments

    torch.manual_seed(0)
    model = model or GPT2LMHeadModel(tiny_config())
    data = [{"input_ids": torch.randint(0, 64, (16,)), "labels": torch.randint(0, 64, (16,))} for _ in range(64)]
    args = TrainingArguments(output_dir=str(out), max_steps=max_steps, logging_steps=logging_steps,
                             eval_strategy="steps" if eval_steps else "no", eval_steps=eval_steps or None,
                             per_device_train_batch_size=4, report_to="none", save_strategy="no", use_cpu=True,
                             run_name=run_name, dataloader_num_workers=0)
    return Trainer(model=model, args=args, train_dataset=data, eval_dataset=data[:8], callbacks=callbacks)


def tiny_config() -> Any:
    from transformers import GPT2Config

    return GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=64, n_positions=16, bos_token_id=0, eos_token_id=0)


def tiny_grpo_trainer(out: Any, callbacks: list[Any], max_steps: int = 4, logging_steps: int = 1) -> Any:
    """A TRL GRPOTrainer of a 1-layer Llama on a word-level tokenizer built in place (CPU, nothing downloaded), rewarded
    by completion length: it logs TRL's ~23 GRPO keys (reward, reward_std, frac_reward_zero_std, completions/...)."""
    import torch
    from datasets import Dataset
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from trl import GRPOConfig, GRPOTrainer

    torch.manual_seed(0)
    words = ["<pad>", "<eos>", "<unk>"] + [f"w{i}" for i in range(60)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                         max_position_embeddings=64, pad_token_id=0, eos_token_id=1, bos_token_id=1))
    prompts = Dataset.from_dict({"prompt": ["w1 w2", "w3 w4", "w5 w6", "w7 w8"] * 4})

    def length_reward(completions: list[str], **_: Any) -> list[float]:
        return [float(len(c)) for c in completions]

    args = GRPOConfig(output_dir=str(out), per_device_train_batch_size=4, num_generations=2, max_completion_length=4,
                      max_steps=max_steps, logging_steps=logging_steps, report_to=[], save_strategy="no",
                      use_cpu=True, bf16=False, seed=0)
    return GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[length_reward], args=args,
                       train_dataset=prompts, callbacks=callbacks)
