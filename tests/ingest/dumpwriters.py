"""Rollout dumps written by the real trainers' own code: verl's ``_write_generations`` (the method its trainer
calls for ``rollout_data_dir`` and ``validation_data_dir``, taken from the installed verl source: importing verl's
trainer needs ray and a GPU stack) and TRL's GRPOTrainer run for two steps on a tiny random model
(``log_completions=True``)."""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.ingest.writers import run_writer
from tests.library_logs import verl_package


def verl_write_generations() -> Callable[..., None]:
    """verl's ``RayPPOTrainer._write_generations(inputs, outputs, gts, scores, reward_extra_infos_dict,
    dump_path, global_steps)``, compiled from verl's source as installed (skips when verl is not installed:
    ``pip install --no-deps verl``)."""
    src = verl_package() / "trainer" / "ppo" / "ray_trainer.py"
    tree = ast.parse(src.read_text())
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_write_generations"),
              None)
    if fn is None:
        pytest.skip(f"this verl has no _write_generations in {src}")
    fn.decorator_list = []  # (a staticmethod in verl 0.9; a method of the trainer before)
    ns: dict[str, Any] = {"json": json, "os": os}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(src), "exec"), ns)
    write: Callable[..., None] = ns["_write_generations"]
    if fn.args.args and fn.args.args[0].arg == "self":
        return lambda *a: write(None, *a)
    return write


def write_verl_dumps(run_dir: Path, steps: range, prompts: int = 3, n: int = 4) -> None:
    """GRPO-like rollouts of ``prompts`` prompts x ``n`` samples per step in ``run_dir/rollouts`` (prompt 0's rewards
    all 1.0: no learning signal), validation samples at the first step in ``run_dir/val``."""
    write = verl_write_generations()
    for step in steps:
        inputs = [f"question {p} at {step}?" for p in range(prompts) for _ in range(n)]
        outputs = [f"answer {i}" for i in range(prompts * n)]
        scores = [1.0 if p == 0 else float(i % 2) for p in range(prompts) for i in range(n)]
        gts = [str(p) for p in range(prompts) for _ in range(n)]
        write(inputs, outputs, gts, scores, {"acc": scores, "too_short": [1.0]}, str(run_dir / "rollouts"),
              step)
    write(["val q"] * 2, ["val a", "val b"], ["1", "1"], [0.0, 1.0], {}, str(run_dir / "val"), steps[0])


#: a tiny Llama and its word-level tokenizer (``model``, ``tk``) for TRL's trainers to train on the CPU in seconds
_TINY_MODEL = """
import sys
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast, LlamaConfig, LlamaForCausalLM
from datasets import Dataset
words = ["<pad>", "<eos>", "<unk>"] + [f"w{i}" for i in range(60)]
tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tk = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
model = LlamaForCausalLM(LlamaConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64,
                                     pad_token_id=0, eos_token_id=1, bos_token_id=1))
"""

TRL_CODE = _TINY_MODEL + """
from trl import GRPOConfig, GRPOTrainer
ds = Dataset.from_dict({"prompt": ["w1 w2", "w3 w4", "w5 w6", "w7 w8"] * 4})
def length_reward(completions, **kw):
    return [float(len(c)) for c in completions]
def constant_reward(completions, **kw):
    return [1.0 for c in completions]
args = GRPOConfig(output_dir=sys.argv[1], per_device_train_batch_size=4, num_generations=2, max_completion_length=4,
                  max_steps=2, logging_steps=1, log_completions=True, report_to=[], save_strategy="no",
                  use_cpu=True, bf16=False, disable_tqdm=True, seed=0)
GRPOTrainer(model=model, processing_class=tk, reward_funcs=[length_reward, constant_reward], args=args,
            train_dataset=ds).train()
"""


@pytest.fixture(scope="session")
def trl_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A TRL GRPOTrainer output_dir after 2 steps with ``log_completions=True``: ``completions/completions_0000N
    .parquet`` (two reward functions: the completion's length and a constant 1.0; 2 samples per prompt)."""
    pytest.importorskip("trl")
    pytest.importorskip("pyarrow")
    out = tmp_path_factory.mktemp("trl") / "grpo-out"
    run_writer(f"import sys; sys.argv = ['x', {str(out)!r}]\n" + TRL_CODE, {"CUDA_VISIBLE_DEVICES": ""})
    return out


@pytest.fixture(scope="session")
def trl_wandb_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same GRPOTrainer for 3 steps reporting to W&B (offline): its completions ``wandb.Table`` once a step
    (files named by W&B's count of ``log`` calls, not by the step), the last one logged again at the end. Returns
    the directory holding ``wandb/``."""
    root = tmp_path_factory.mktemp("trl_wandb")
    _grpo_to("wandb", root, {"WANDB_DIR": str(root), "WANDB_PROJECT": "p"})
    return root


@pytest.fixture(scope="session")
def trl_trackio_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same GRPOTrainer for 3 steps reporting to trackio: its completions a ``trackio.Table`` logged alone once
    a step (at trackio's own count of log calls; its rows name the trainer's step), the last one logged again at the
    end. Returns its TRACKIO_DIR."""
    root = tmp_path_factory.mktemp("trl_trackio")
    _grpo_to("trackio", root, {"TRACKIO_DIR": str(root / "trackio")})
    return root / "trackio"


PREFERENCE_CODE = _TINY_MODEL + """
import copy
from transformers import LlamaForSequenceClassification
from trl import DPOConfig, DPOTrainer, RewardConfig, RewardTrainer, SFTConfig, SFTTrainer
out = sys.argv[1]
ds = Dataset.from_dict({"prompt": ["w1 w2", "w3 w4", "w5 w6", "w7 w8"] * 4, "chosen": ["w9 w10"] * 16,
                       "rejected": ["w11"] * 16})
common = dict(per_device_train_batch_size=4, max_steps=4, logging_steps=1, report_to=["trackio"], use_cpu=True,
              bf16=False, disable_tqdm=True, seed=0, learning_rate=1e-3, eval_strategy="steps", eval_steps=2,
              per_device_eval_batch_size=4)
args = DPOConfig(output_dir=f"{out}/dpo", project="dpo", save_strategy="steps", save_steps=4, **common)
DPOTrainer(model=model, ref_model=copy.deepcopy(model), processing_class=tk, args=args, train_dataset=ds,
           eval_dataset=ds.select(range(4))).train()
scorer = LlamaForSequenceClassification(LlamaConfig(**{**model.config.to_dict(), "num_labels": 1}))
pairs = Dataset.from_dict({"chosen": ["w1 w2 w9"] * 16, "rejected": ["w1 w2 w11"] * 16})
args = RewardConfig(output_dir=f"{out}/rm", project="rm", save_strategy="no", **common)
RewardTrainer(model=scorer, processing_class=tk, args=args, train_dataset=pairs,
              eval_dataset=pairs.select(range(4))).train()
texts = Dataset.from_dict({"text": ["w1 w2 w3 w4 w5", "w3 w4 w5 w6", "w5 w6 w7", "w7 w8 w9 w10"] * 4})
args = SFTConfig(output_dir=f"{out}/sft", project="sft", save_strategy="no", **common)
SFTTrainer(model=model, processing_class=tk, args=args, train_dataset=texts,
           eval_dataset=texts.select(range(4))).train()
"""


@pytest.fixture(scope="session")
def trl_preference_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TRL's DPOTrainer, RewardTrainer and SFTTrainer for 4 steps each (an evaluation every 2) reporting to trackio,
    in one interpreter: the directory holding ``trackio/dpo.db``, ``trackio/rm.db`` and ``trackio/sft.db`` (a project
    each) and the DPO run's ``out/dpo/checkpoint-4/trainer_state.json``."""
    pytest.importorskip("trl")
    pytest.importorskip("trackio")
    root = tmp_path_factory.mktemp("trl_preference")
    run_writer(f"import sys; sys.argv = ['x', {str(root / 'out')!r}]\n" + PREFERENCE_CODE,
               {"CUDA_VISIBLE_DEVICES": "", "TRACKIO_DIR": str(root / "trackio")}, timeout=300)
    return root


def _grpo_to(tracker: str, root: Path, env: dict[str, str]) -> None:
    """TRL_CODE's GRPOTrainer for 3 steps, its output directory ``root/out``, reporting to ``tracker``."""
    pytest.importorskip("trl")
    pytest.importorskip(tracker)
    code = TRL_CODE.replace("report_to=[]", f"report_to=[{tracker!r}]").replace("max_steps=2", "max_steps=3")
    assert code != TRL_CODE
    run_writer(f"import sys; sys.argv = ['x', {str(root / 'out')!r}]\n" + code,
               {"CUDA_VISIBLE_DEVICES": "", **env}, timeout=300)


#: validation steps of :func:`verl_wandb_run` (its training steps: 1-12) and samples logged at each
VERL_VAL_STEPS, VERL_VAL_SAMPLES = (0, 4, 8, 12), 3


@pytest.fixture(scope="session")
def verl_wandb_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A verl run logged to W&B (offline) by verl's own ``Tracking`` and ``ValidationGenerationsLogger`` (from the
    installed verl source), as its trainer calls them: at each validation step the generations table, logged again
    with every earlier validation's row (``val/generations``: a folder), and the validation score, then the step's
    metrics, each with ``step=``. Returns the directory holding ``wandb/``."""
    pytest.importorskip("wandb")
    root = tmp_path_factory.mktemp("verl_wandb")
    _verl_run("wandb", "import wandb; wandb.finish()", {"WANDB_DIR": str(root)})
    return root


@pytest.fixture(scope="session")
def verl_trackio_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same verl run logged to trackio (project ``proj``, run ``verl-exp``): its validation generations are
    traces (``trackio.Trace``, one a sample, under ``val/generations``). Returns its TRACKIO_DIR."""
    pytest.importorskip("trackio")
    root = tmp_path_factory.mktemp("verl_trackio")
    _verl_run("trackio", "import trackio; trackio.finish()", {"TRACKIO_DIR": str(root)})
    return root


@pytest.fixture(scope="session")
def verl_tensorboard_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same verl run logged to TensorBoard ($TENSORBOARD_DIR): its validation generations are one markdown text
    a step (``add_text("val/generations", ...)``, by a second SummaryWriter in the same directory). Returns the
    directory."""
    pytest.importorskip("tensorboard")
    root = tmp_path_factory.mktemp("verl_tensorboard")
    _verl_run("tensorboard", "tracking.finish(); generations.writer.close()", {"TENSORBOARD_DIR": str(root / "tb")})
    return root / "tb"


def _verl_run(backend: str, finish: str, env: dict[str, str]) -> None:
    src = verl_package() / "utils" / "tracking.py"
    run_writer(f"""
        import importlib.util
        spec = importlib.util.spec_from_file_location("verl_tracking", {str(src)!r})
        vt = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(vt)
        tracking = vt.Tracking("proj", "verl-exp", default_backend=[{backend!r}], config={{"trainer": {{}}}})
        generations = vt.ValidationGenerationsLogger()
        for step in range(13):
            if step in {VERL_VAL_STEPS!r}:
                samples = [(f"question {{i}} at {{step}}", f"answer {{i}} at {{step}}", float(i % 2))
                           for i in range({VERL_VAL_SAMPLES})]
                generations.log([{backend!r}], samples, step)
                tracking.log({{"val-core/acc/mean@1": step / 20}}, step=step)
            if step:
                tracking.log({{"actor/pg_loss": 1.0 / step, "critic/score/mean": step / 10}}, step=step)
        {finish}
    """, env, timeout=300)
