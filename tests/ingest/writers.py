"""Runs written by the real libraries (W&B offline, TensorBoard, trackio, Ray Tune, torchtune), once per session,
and helpers to read them the way the commands do. Each writer runs in a subprocess: wandb, trackio and Ray keep
services, threads and module-level directories that must not leak into the test process."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest.files.follow import Follower

WANDB_STEPS = 6


def run_writer(code: str, env: dict[str, str], timeout: float = 120) -> None:
    """Run ``code`` in a fresh interpreter with ``env`` added (no network: the writers are offline / local)."""
    full = {**os.environ, **env, "WANDB_SILENT": "true", "WANDB_MODE": "offline", "NO_PROXY": "*",
            "HF_HUB_OFFLINE": "1", "TRACKIO_DISABLE_TELEMETRY": "1",
            "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full, check=True, timeout=timeout,
                   capture_output=True)


@pytest.fixture(scope="session")
def wandb_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An offline W&B run: nested keys, a NaN and an inf, a wandb.Table, a display name; exit code 0. Returns the
    directory holding ``wandb/``."""
    pytest.importorskip("wandb")
    root = tmp_path_factory.mktemp("wandb")
    run_writer(f"""
        import math, wandb
        run = wandb.init(project="p", name="grpo-a", config={{"lr": 0.001}})
        for i in range({WANDB_STEPS}):
            run.log({{"train/loss": 1.0 / (i + 1), "nested": {{"a": i, "b": {{"c": 2 * i}}}},
                     "x": math.nan if i == 2 else float(i), "y": math.inf if i == 3 else -1.0}})
        run.log({{"samples": wandb.Table(columns=["prompt", "completion", "reward"],
                                         data=[["p1", "c1", 1.0], ["p1", "c2", 0.0]])}})
        run.finish()
    """, {"WANDB_DIR": str(root)})
    return root


@pytest.fixture(scope="session")
def wandb_crashed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An offline W&B run finished with exit code 3."""
    pytest.importorskip("wandb")
    root = tmp_path_factory.mktemp("wandb_crash")
    run_writer("""
        import wandb
        run = wandb.init(project="p", name="dies")
        for i in range(3):
            run.log({"loss": float(i)})
        run.finish(exit_code=3)
    """, {"WANDB_DIR": str(root)})
    return root


_RESUMABLE = """
    import os, signal, sys, time, wandb
    name, run_id, first, last, how = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    run = wandb.init(project=os.environ.get("PROJECT", "p"), name=name, id=run_id, resume="allow")
    for s in range(first, last):
        run.log({"loss": 1.0 / (s + 1) + 0.01 * (s % 3), "reward": 0.5 + 0.001 * s}, step=s)
        if s in (45, 60):
            run.log({"samples": wandb.Table(columns=["prompt", "completion", "reward"],
                                             data=[[f"p{s}", f"c{s}", 1.0]])}, step=s)
    if how == "kill":  # once the service has written the rows out: killed as the OOM killer or a scheduler kills
        time.sleep(3)
        os.kill(os.getpid(), signal.SIGKILL)
    run.finish(exit_code=1 if how == "crash" else 0)
"""


def resumable_run(root: Path, name: str, run_id: str, steps: range, how: str, project: str = "p") -> None:
    """One process of an offline W&B run ``run_id`` of ``project`` (``resume="allow"``) under ``root``: loss and
    reward at ``steps``, a wandb.Table at steps 45 and 60 where logged; finished (``ok``), finished with exit code 1
    (``crash``) or killed with SIGKILL (``kill``) after its rows."""
    full = {**os.environ, "WANDB_DIR": str(root), "WANDB_SILENT": "true", "WANDB_MODE": "offline",
            "PROJECT": project}
    subprocess.run([sys.executable, "-c", textwrap.dedent(_RESUMABLE), name, run_id, str(steps.start),
                    str(steps.stop), how], env=full, check=False, timeout=120, capture_output=True)


@pytest.fixture(scope="session")
def wandb_resumed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Offline W&B runs resumed by later processes (``resume="allow"``: a directory per process): ``grpo`` (id
    g1) crashed at step 49 (exit code 1) and resumed from step 40 to 79; ``oom`` (id k1) killed with SIGKILL after
    step 2999 and resumed from 2500 to 2599; ``base`` (id b1), one process, steps 0-79. Returns the directory
    holding ``wandb/``."""
    pytest.importorskip("wandb")
    root = tmp_path_factory.mktemp("wandb_resumed")
    resumable_run(root, "grpo", "g1", range(0, 50), "crash")
    resumable_run(root, "grpo", "g1", range(40, 80), "ok")
    resumable_run(root, "oom", "k1", range(0, 3000), "kill")
    resumable_run(root, "oom", "k1", range(2500, 2600), "ok")
    resumable_run(root, "base", "b1", range(0, 80), "ok")
    return root


@pytest.fixture(scope="session")
def trackio_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trackio project with two runs (one logs a NaN) in its own TRACKIO_DIR."""
    pytest.importorskip("trackio")
    root = tmp_path_factory.mktemp("trackio")
    run_writer("""
        import math, trackio
        for name, n in (("run-a", 5), ("run-b", 3)):
            trackio.init(project="proj", name=name, config={"lr": 0.1})
            for i in range(n):
                trackio.log({"train/loss": 1.0 / (i + 1), "x": math.nan if i == 1 else float(i),
                             "nested": {"a": i}})
            trackio.finish()
    """, {"TRACKIO_DIR": str(root)})
    return root


@pytest.fixture(scope="session")
def hf_tracked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A transformers ``Trainer`` run (a tiny GPT-2 built from its config, 8 steps, a log every 2 and an evaluation
    every 4) reporting to W&B (offline) and trackio, as ``report_to`` makes it. Beside them ``history.json``: the
    trainer's own ``state.log_history``. Returns the directory holding ``wandb/``, ``trackio/`` and the history."""
    for lib in ("torch", "transformers", "wandb", "trackio"):
        pytest.importorskip(lib)
    root = tmp_path_factory.mktemp("hf_tracked")
    run_writer(f"""
        import json
        from tests.ingest.hftiny import tiny_trainer

        trainer = tiny_trainer(eval_rows=8, output_dir={str(root / "out")!r}, max_steps=8, logging_steps=2,
                               eval_strategy="steps", eval_steps=4, save_strategy="no",
                               report_to=["wandb", "trackio"], run_name="hf-a")
        trainer.train()
        with open({str(root / "history.json")!r}, "w") as f:
            json.dump(trainer.state.log_history, f)
    """, {"WANDB_DIR": str(root), "TRACKIO_DIR": str(root / "trackio"), "WANDB_PROJECT": "p"}, timeout=300)
    return root



#: the trainings of :func:`hf_every_tracker`: (arm, seed, learning rate)
HF_TRAININGS = (("hi", 0, 1e-3), ("hi", 1, 1e-3), ("lo", 0, 1e-4), ("lo", 1, 1e-4))


@pytest.fixture(scope="session")
def hf_every_tracker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four transformers ``Trainer`` runs (:data:`HF_TRAININGS`: two arms of two seeds, a tiny GPT-2 built from its
    config, 16 steps, a log every 2, an evaluation every 8, a checkpoint every 8), each run named ``<arm>_seed<N>`` and
    reporting to W&B (offline), trackio and TensorBoard: one training in five files (W&B's, a trackio run, the events
    of ``<arm>_seed<N>/runs/<time>_<host>/``, the checkpoints' ``trainer_state.json``). Returns the directory holding
    the output directories, ``wandb/`` and ``trackio/``."""
    for lib in ("torch", "transformers", "wandb", "trackio", "tensorboard"):
        pytest.importorskip(lib)
    root = tmp_path_factory.mktemp("hf_every")
    run_writer(f"""
        import wandb
        from tests.ingest.hftiny import tiny_trainer

        for arm, seed, lr in {HF_TRAININGS!r}:
            tiny_trainer(seed, rows=64, eval_rows=8, output_dir=f"{root}/{{arm}}_seed{{seed}}",
                         run_name=f"{{arm}}_seed{{seed}}", max_steps=16, logging_steps=2, eval_strategy="steps",
                         eval_steps=8, save_strategy="steps", save_steps=8,
                         report_to=["wandb", "trackio", "tensorboard"], learning_rate=lr, seed=seed).train()
            wandb.finish()  # (a notebook's way: the next Trainer would log on into the same W&B run)
    """, {"WANDB_DIR": str(root), "TRACKIO_DIR": str(root / "trackio"), "WANDB_PROJECT": "p"}, timeout=600)
    return root


_TRACKIO_LOG = """
    import trackio
    trackio.init(project="p", name={name!r}, resume={resume!r})
    for s in range({first}, {last}):
        trackio.log({{"loss": 1.0 / (s + 1)}}, step=s)
        if s == 2:
            trackio.log({{"gens": trackio.Table(columns=["prompt"], data=[["q2"]])}}, step=s)
    trackio.finish()
"""


def trackio_rows(root: Path, name: str, steps: range, resume: str = "never") -> None:
    """Rows of run ``name`` of trackio project ``p`` in TRACKIO_DIR ``root`` at ``steps`` (loss 1/(step+1); a
    trackio.Table at step 2), logged by trackio (``resume`` as trackio.init takes it)."""
    run_writer(_TRACKIO_LOG.format(name=name, first=steps.start, last=steps.stop, resume=resume),
               {"TRACKIO_DIR": str(root)})


def trackio_rename(root: Path, old: str, new: str) -> None:
    """Run ``old`` of trackio project ``p`` in TRACKIO_DIR ``root`` renamed ``new`` by trackio's API."""
    run_writer(f"""
        import trackio
        (run,) = [r for r in trackio.Api().runs("p") if r.name == {old!r}]
        run.rename({new!r})
    """, {"TRACKIO_DIR": str(root)})


RAY_STEPS = 5


@pytest.fixture(scope="session")
def ray_trials(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Ray Tune experiment of two trials (lr 0.1 and 0.2) of a function trainable reporting a loss, a NaN and a
    nested dict, run by ``tune.Tuner`` on a local Ray of one CPU. Returns the experiment directory ``exp``."""
    pytest.importorskip("ray.tune")
    root = tmp_path_factory.mktemp("ray")
    run_writer(f"""
        import math, ray
        from ray import tune

        def trainable(config):
            for i in range({RAY_STEPS}):
                tune.report({{"loss": 1.0 / (i + 1), "x": math.nan if i == 1 else float(i),
                             "eval": {{"acc": config["lr"] * i}}}})

        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
        tune.Tuner(trainable, param_space={{"lr": tune.grid_search([0.1, 0.2])}},
                   run_config=tune.RunConfig(storage_path={str(root)!r}, name="exp", verbose=0)).fit()
        ray.shutdown()
    """, {"RAY_USAGE_STATS_ENABLED": "0"}, timeout=300)
    return root / "exp"


TUNE_STEPS = 6


@pytest.fixture(scope="session")
def torchtune_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A torchtune ``DiskLogger`` file (``log_<ts>.txt``): ``log_dict`` rows of floats and a tensor, a NaN, and a
    single ``log`` call. Returns the file."""
    pytest.importorskip("torchtune")
    root = tmp_path_factory.mktemp("torchtune") / "lora-sft" / "logs"
    run_writer(f"""
        import math, torch
        from torchtune.training.metric_logging import DiskLogger

        log = DiskLogger(log_dir={str(root)!r})
        for i in range({TUNE_STEPS}):
            log.log_dict({{"loss": 1.0 / (i + 1), "lr": 2e-5, "grad_norm": torch.tensor(0.5 * i),
                          "x": math.nan if i == 1 else float(i)}}, step=i + 1)
        log.log("tokens_per_second_per_gpu", 1234.5, step={TUNE_STEPS})
        log.close()
    """, {}, timeout=180)
    (path,) = root.glob("log_*.txt")
    return path


def wandb_file(root: Path) -> Path:
    (path,) = root.glob("wandb/*run-*/run-*.wandb")
    return path


def read_once(*paths: Path) -> Follower:
    """What a one-shot command reads (``tail``, ``summary``): one scan and the finish."""
    f = Follower(list(paths))
    f.scan()
    f.finish()
    return f


def rows_of(store: Any) -> list[dict[str, Any]]:
    return list(store.stored_rows())


def same(a: Any, b: Any) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def only(f: Follower):  # type: ignore[no-untyped-def]
    """The one run a follower has read."""
    (store,) = f.stores.values()
    return store


def torch_run(logdir: Path, steps: range) -> None:
    """TensorBoard events by torch's SummaryWriter: train/loss 1/(i+1) and x = i (NaN at step 1)."""
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(logdir))
    for i in steps:
        w.add_scalar("train/loss", 1.0 / (i + 1), i)
        w.add_scalar("x", math.nan if i == 1 else float(i), i)
    w.close()


def event_file(d: Path) -> Path:
    (path,) = d.glob("events.out.tfevents.*")
    return path


def copy_dir(wandb_run: Path, tmp_path: Path) -> Path:
    """Where a copy of the run's .wandb file goes under ``tmp_path`` (its directory made, the file not written)."""
    src = wandb_file(wandb_run)
    dst = tmp_path / "wandb" / src.parent.name / src.name
    dst.parent.mkdir(parents=True)
    return dst


def sine_csv(dir: Path, steps: range, scale: float = 1.0) -> None:
    """``dir/metrics.csv`` written by Lightning's CSVLogger: ``loss`` ``scale * (1 + sin(step))`` at each of
    ``steps`` (a run, or a piece of one resumed in a new version directory)."""
    from tests.library_logs import write_lightning_rows

    write_lightning_rows(dir, [(s, {"loss": scale * (1 + math.sin(s))}) for s in steps])
