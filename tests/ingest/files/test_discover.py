"""steptable.ingest.files.discover: which files under a path are runs (metrics files by name, unnamed JSONL and
console logs by their content), their arms and side files; unreadable directories and files, FIFOs and devices are
reported, never read or waited on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest import Follower, discover, load
from tests.helpers import printed_steps, write_rows
from tests.ingest.helpers import assert_rows, rew_rows, train_line


def test_unreadable_directory_is_reported_once_and_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory discovery cannot list (permission, I/O error) is skipped with one report; the other runs load,
    and the skipped one arrives once it can be read."""
    import os

    root = tmp_path / "runs"
    for arm in ("armA", "armB"):
        (root / arm).mkdir(parents=True)
        (root / arm / "metrics.jsonl").write_bytes(train_line(0))
    locked = root / "armB"
    real_scandir = os.scandir

    def scandir(p: Any = ".") -> Any:
        if Path(p) == locked:
            raise PermissionError(13, "Permission denied", str(p))
        return real_scandir(p)

    monkeypatch.setattr(os, "scandir", scandir)
    f = Follower([root])
    assert f.scan() == {"armA/metrics.jsonl"}
    f.scan()
    assert f.errors == [f"{locked}: unreadable (Permission denied); skipped"]
    monkeypatch.setattr(os, "scandir", real_scandir)
    assert f.scan() == {"armB/metrics.jsonl"} and len(f.errors) == 1


def test_unreadable_unnamed_jsonl_is_reported_once_and_retried(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``*.jsonl`` whose content must say whether it holds metrics, but which cannot be opened, is not silently
    waited on forever."""
    import builtins

    path = tmp_path / "runs" / "exp7.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(train_line(0) + train_line(1))
    real_open = builtins.open

    def denied(p: Any, *a: Any, **k: Any) -> Any:
        if Path(p) == path:
            raise PermissionError(13, "Permission denied", str(p))
        return real_open(p, *a, **k)

    monkeypatch.setattr(builtins, "open", denied)
    f = Follower([tmp_path / "runs"])
    assert f.scan() == set()
    f.scan()
    assert f.errors == [f"{path}: unreadable (Permission denied); skipped"]
    monkeypatch.setattr(builtins, "open", real_open)
    assert f.scan() == {"exp7.jsonl"}
    assert_rows(f.stores["exp7.jsonl"], [0, 1])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("name", ["other.jsonl", "trainer_state.json", "urandom"])
def test_fifos_and_devices_are_reported_not_read(tmp_path: Path, name: str) -> None:
    """A FIFO would block an open or a read forever and a device never ends: reported as not a regular file, and
    the one-shot commands still return (run in a child with a deadline, so a hang fails instead of stalling)."""
    run = tmp_path / "runs" / "arm"
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_bytes(train_line(0))
    if name == "urandom":
        if not os.path.exists("/dev/urandom"):
            pytest.skip("no /dev/urandom")
        target = run / "trainer_state.json"
        os.symlink("/dev/urandom", target)
    else:
        target = run / name
        os.mkfifo(target)
    proc = subprocess.run([sys.executable, "-m", "steptable", "summary", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=60)
    assert "arm" in proc.stdout and "not a regular file" in proc.stderr, (proc.stdout, proc.stderr)


def test_unnamed_jsonl_with_a_malformed_first_line_is_still_read(tmp_path: Path) -> None:
    """exp.jsonl whose first row was cut by a crash: judged by its first well-formed row, the bad one reported."""
    path = tmp_path / "runs" / "exp7.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"step": 0, "loss": NaN\n' + train_line(1) + train_line(2))
    f = Follower([tmp_path / "runs"])
    assert f.scan() == {"exp7.jsonl"}
    assert_rows(f.stores["exp7.jsonl"], [1, 2])
    assert len(f.errors) == 1 and f.errors[0].startswith(f"{path}:1: ")


def test_unnamed_jsonl_of_garbage_is_not_a_run(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "notes.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not json\n" * 20)
    f = Follower([tmp_path / "runs"])
    assert f.scan() == set() and f.stores == {} and f.errors == []


def test_discover_runs_arms_and_side_files(tmp_path: Path) -> None:
    for arm in ("vanilla", "routeA", "absorb"):
        write_rows(tmp_path / "logs" / arm / "metrics.jsonl", rew_rows(0, 2))
    write_rows(tmp_path / "logs" / "routeA" / "generations.jsonl", [{"step": 0, "prompt": "p", "reward": 1}])
    write_rows(tmp_path / "logs" / "routeA" / "custom_eval.jsonl", [{"iteration": 0, "acc": 0.5, "f1": 0.4}])
    write_rows(tmp_path / "logs" / "routeA" / "prompts.jsonl", [{"id": "a", "text": "b"}])
    (tmp_path / "logs" / "routeA" / "config.json").write_text("{}")
    cands = {c.run_id: c for c in discover([tmp_path / "logs"])}
    assert sorted(cands) == ["absorb/metrics.jsonl", "routeA/custom_eval.jsonl", "routeA/metrics.jsonl",
                             "routeA/prompts.jsonl", "vanilla/metrics.jsonl"]
    assert cands["routeA/metrics.jsonl"].arm == "routeA" and cands["routeA/metrics.jsonl"].confirmed
    assert not cands["routeA/custom_eval.jsonl"].confirmed  # decided by its content
    assert sorted(cands["routeA/metrics.jsonl"].side_files) == ["config", "generations"]
    f = Follower([tmp_path / "logs"])
    f.scan()
    assert sorted(f.stores) == ["absorb/metrics.jsonl", "routeA/custom_eval.jsonl", "routeA/metrics.jsonl",
                                "vanilla/metrics.jsonl"]  # prompts.jsonl holds no metric rows
    assert f.stores["routeA/custom_eval.jsonl"].arm == "custom_eval"


def test_a_console_log_given_up_on_comes_back_when_it_prints_metrics(tmp_path: Path) -> None:
    """A training log that opens with noise (NCCL debug output, a model loading) is dropped as not a run, and
    taken back, from its start, once a metrics line arrives."""
    log = tmp_path / "tz" / "train.log"
    log.parent.mkdir()
    noise = "(main_task pid=1) NCCL INFO Channel 00/32 : 0[0] -> 1[1] via P2P/IPC/read\n"
    log.write_text(noise * 2000)
    (tmp_path / "tz" / "README.txt").write_text("how to run\n")
    fol = Follower([tmp_path])
    fol.scan()
    assert fol.stores == {} and fol._sources == {}  # neither log is polled while it shows no metrics
    assert discover([tmp_path], settled=fol._rejected.settled) == []  # nor read again by discovery while unchanged
    with open(log, "a") as f:
        f.write(noise * 10)
    fol.scan()
    assert fol.stores == {}  # more noise: still not a run, and only the new bytes were searched
    with open(log, "a") as f:
        f.write("".join(f"(main_task pid=1) step:{s} - critic/score/mean:0.5\n" for s in (1, 2)))
    fol.scan()
    assert [list(st.steps) for st in fol.stores.values()] == [[1, 2]]


def test_a_dataset_of_number_strings_is_not_taken_for_a_run(tmp_path: Path) -> None:
    """Discovery counts JSON numbers only: a dataset JSONL beside a run whose ids and labels are number strings
    stays a dataset (the store reading such strings as numbers must not make it look like metrics)."""
    run = tmp_path / "logs" / "a" / "metrics.jsonl"
    run.parent.mkdir(parents=True)
    run.write_text("".join(json.dumps({"step": s, "loss": 1 / (s + 1)}) + "\n" for s in range(3)))
    data = tmp_path / "logs" / "a" / "train_split.jsonl"
    data.write_text("".join(json.dumps({"id": str(100 + i), "label": "1", "difficulty": "0.5", "text": "q"}) + "\n"
                            for i in range(20)))
    fo = Follower([tmp_path / "logs"])
    fo.scan()
    assert list(fo.stores) == ["a/metrics.jsonl"]


def test_an_empty_log_is_decided_when_its_first_line_arrives(tmp_path: Path) -> None:
    from steptable.ingest import Follower

    path = tmp_path / "v" / "metrics.log"  # verl truncates its file logger's file at every launch
    path.parent.mkdir()
    path.write_text("")
    fol = Follower([path])
    fol.scan()
    with open(path, "a") as f:
        f.write("".join(json.dumps({"step": s, "data": {"actor/pg_loss": 0.1}}) + "\n" for s in range(3)))
    fol.scan()
    assert [list(s.steps) for s in fol.stores.values()] == [[0, 1, 2]]
    config = tmp_path / "tz" / "train.log"  # a console log opening with a verl config dump (a "data" key, no step)
    config.parent.mkdir()
    config.write_text('{"data": {"train_batch_size": 8}}\n(main_task pid=1) step:1 - critic/kl:0.04\n')
    fol2 = Follower([config])
    fol2.scan()
    assert [s.kind for s in fol2.stores.values()] == ["console"]


def test_a_fifo_named_like_a_log_does_not_hang_discovery(tmp_path: Path) -> None:
    import subprocess
    import sys

    write_rows(tmp_path / "a" / "metrics.jsonl", [{"step": 0, "loss": 1.0}])
    os.mkfifo(tmp_path / "a" / "train.log")  # opening it to look at its first line would block
    p = subprocess.run([sys.executable, "-m", "steptable", "tail", str(tmp_path), "--format", "jsonl"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and printed_steps(p.stdout) == [0]


@pytest.mark.parametrize("formats", [["json", "csv", "tensorboard"], ["csv", "tensorboard"], ["tensorboard"]])
def test_sb3_formats_of_one_logger_are_one_run(tmp_path: Path, formats: list[str]) -> None:
    """stable-baselines3's logger writes the same rows to each format in one folder: the run is its progress.json,
    else its progress.csv, else its events (not two or three runs of one arm, taken for seeds); a file named on the
    command line is read whatever is beside it."""
    pytest.importorskip("stable_baselines3")
    pytest.importorskip("tensorboard")
    from stable_baselines3.common.logger import configure

    folder = tmp_path / "ppo1"
    log = configure(str(folder), formats)
    for step in (256, 512, 768):
        log.record("rollout/ep_rew_mean", step / 10)
        log.record("time/total_timesteps", step)
        log.dump(step)
    log.close()
    want = {"json": "progress.json", "csv": "progress.csv"}.get(formats[0])
    found = discover([tmp_path])
    assert len(found) == 1 and found[0].arm == "ppo1", found
    assert found[0].path.name == want if want else found[0].kind == "tensorboard", found
    f = Follower([tmp_path])
    f.scan()
    f.finish()
    (store,) = f.stores.values()
    assert list(store.steps) == [256, 512, 768]
    if "csv" in formats:
        assert discover([folder / "progress.csv"])[0].path.name == "progress.csv"


def _hf_output(tmp_path: Path) -> Path:
    """A real Trainer's output directory: steptable's callback, the TensorBoard callback, a checkpoint every 5 steps."""
    pytest.importorskip("transformers")
    pytest.importorskip("tensorboard")
    from transformers.integrations import TensorBoardCallback
    from transformers.trainer_utils import SaveStrategy

    from steptable.integrations.hf import StepTableCallback
    from tests.integrations.helpers import tiny_trainer

    out = tmp_path / "grpo-a"
    trainer = tiny_trainer(out, [StepTableCallback(), TensorBoardCallback()], max_steps=10)
    trainer.args.save_strategy, trainer.args.save_steps = SaveStrategy.STEPS, 5
    trainer.train()
    assert {p.name for p in out.glob("checkpoint-*/trainer_state.json")} and list(out.glob("runs/*/events.*"))
    return out


def test_an_hf_run_with_steptables_callback_is_one_run(tmp_path: Path) -> None:
    """steptable's HF callback writes metrics.jsonl into the trainer's output directory, where the trainer's
    checkpoints (trainer_state.json) and its TensorBoard callback (runs/<time>_<host>/) hold the same rows: one run,
    the callback's (three before, which compare took for seeds of one arm). Asked for by name or by their directory,
    the others are read; without the callback's file they are the runs, as before."""
    out = _hf_output(tmp_path)
    runs = load([tmp_path])
    assert [(s.kind, s.arm, len(s)) for s in runs.values()] == [("jsonl", "grpo-a", 2)], list(runs)
    assert [s.kind for s in load([out / "runs"]).values()] == ["tensorboard"]
    assert [s.kind for s in load([out / "checkpoint-10" / "trainer_state.json"]).values()] == ["trainer_state"]
    (out / "metrics.jsonl").unlink()
    assert sorted(s.kind for s in load([tmp_path]).values()) == ["tensorboard", "trainer_state"]


def test_a_followed_copy_is_retired_when_steptables_file_appears_beside_it(tmp_path: Path) -> None:
    """Watched from before the training: the trainer's TensorBoard events (and a checkpoint) came before the
    callback's first row. Once its metrics.jsonl is there, the copies leave the runs followed."""
    out = _hf_output(tmp_path / "logs")
    held = tmp_path / "held"  # (outside the tree watched)
    held.mkdir()
    mine = [p for p in out.iterdir() if p.name == "metrics.jsonl" or p.name.startswith("steptable")]
    for p in mine:
        p.rename(held / p.name)
    fo = Follower([tmp_path / "logs"])
    fo.scan()
    assert sorted(s.kind for s in fo.stores.values()) == ["tensorboard", "trainer_state"], list(fo.stores)
    copies = set(fo.stores)
    for p in mine:
        (held / p.name).rename(out / p.name)
    changed = fo.scan()
    assert [s.kind for s in fo.stores.values()] == ["jsonl"] and copies <= changed


def test_accelerates_tensorboard_hyper_parameters_are_no_run_of_their_own(tmp_path: Path) -> None:
    """Accelerate's TensorBoard tracker stores the config with ``SummaryWriter.add_hparams``, which writes events
    into ``<project>/<run>/<time.time()>/``: the run's hyper-parameters, no rows; the run is the directory above."""
    pytest.importorskip("accelerate")
    pytest.importorskip("tensorboard")
    subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        from accelerate import Accelerator
        acc = Accelerator(log_with="tensorboard", project_dir={str(tmp_path)!r}, cpu=True)
        acc.init_trackers("proj", config={{"lr": 0.1, "batch": 8}})
        for step in range(4):
            acc.log({{"loss": 1.0 / (step + 1)}}, step=step)
        acc.end_training()
    """)], check=True, capture_output=True, timeout=120)
    events = sorted(p.relative_to(tmp_path).parent.as_posix() for p in tmp_path.rglob("events.out.tfevents.*"))
    assert len(events) == 2 and events[1].startswith(events[0] + "/")  # the run's, and add_hparams' inside it
    assert [(c.run_id, c.kind) for c in discover([tmp_path])] == [("proj", "tensorboard")]
    assert [c.run_id for c in discover([tmp_path / events[1]])] == []  # (its directory asked for: no rows there)


def _synced_run(work: Path, wandb_dir: Path) -> Path:
    """A W&B run with ``sync_tensorboard=True`` whose script (in ``work``) writes TensorBoard events to
    ``work/tblogs``, W&B's files under ``wandb_dir``; W&B's copy of the event file."""
    from tests.ingest.writers import run_writer

    pytest.importorskip("wandb")
    pytest.importorskip("tensorboard")
    work.mkdir(exist_ok=True)
    run_writer(f"""
        import os, wandb
        from torch.utils.tensorboard import SummaryWriter
        os.chdir({str(work)!r})  # (W&B copies a log directory named relative to the working one)
        run = wandb.init(project="p", name="synced", sync_tensorboard=True)
        writer = SummaryWriter("tblogs")
        for step in range(0, 50, 5):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
        writer.close()
        run.finish()
    """, {"WANDB_DIR": str(wandb_dir)})
    (copied,) = wandb_dir.glob("wandb/*run-*/files/**/events.out.tfevents.*")
    return copied


def test_wandbs_copy_of_synced_tensorboard_events_is_no_run_of_its_own(tmp_path: Path) -> None:
    """``wandb.init(sync_tensorboard=True)`` copies each event file into the run's ``files/`` for upload: the same
    rows as the writer's own directory (and the W&B run's history), passed over unless named (it was a second
    TensorBoard run of the arm, which compare took for a second seed)."""
    copied = _synced_run(tmp_path, tmp_path)
    found = discover([tmp_path])
    assert [c.run_id for c in found if c.kind == "tensorboard"] == ["tblogs"]
    assert [c.kind for c in found].count("wandb") == 1
    assert [c.kind for c in discover([copied])] == ["tensorboard"]  # (named: read)


def test_wandbs_copy_of_synced_tensorboard_events_is_passed_over_with_wandb_dir_elsewhere(tmp_path: Path) -> None:
    """With ``WANDB_DIR`` other than the working directory, W&B's copy in the run's ``files/`` (a link to the
    writer's file) is no run of its own either: it was a second TensorBoard run of the arm beside the writer's."""
    copied = _synced_run(tmp_path / "work", tmp_path / "wb")
    found = discover([tmp_path])
    assert [c.run_id for c in found if c.kind == "tensorboard"] == ["work/tblogs"]
    assert [c.kind for c in found].count("wandb") == 1
    assert [c.kind for c in discover([tmp_path / "wb"]) if c.kind != "console"] == ["wandb"]  # (its history)
    assert [c.kind for c in discover([copied])] == ["tensorboard"]  # (named: read)


def test_tensorboard_events_written_into_a_wandb_runs_files_are_a_run(tmp_path: Path) -> None:
    """``SummaryWriter(wandb.run.dir)`` (no sync_tensorboard): the events in the run's ``files/`` are the only copy of
    what the script wrote there, none of it in the W&B run's history; they were passed over as W&B's copy of events
    written elsewhere, and their metrics shown nowhere."""
    from tests.ingest.writers import run_writer

    pytest.importorskip("wandb")
    pytest.importorskip("tensorboard")
    run_writer(f"""
        import os, wandb
        from torch.utils.tensorboard import SummaryWriter
        os.chdir({str(tmp_path)!r})
        run = wandb.init(project="p", name="own")
        writer = SummaryWriter(run.dir)
        for step in range(0, 50, 5):
            writer.add_scalar("tb_only", 1.0 / (step + 1), step)
        writer.close()
        run.log({{"loss": 1.0}})
        run.finish()
    """, {"WANDB_DIR": str(tmp_path)})
    (events,) = tmp_path.glob("wandb/*run-*/files/events.out.tfevents.*")
    found = discover([tmp_path])
    assert [(c.run_id, c.kind) for c in found if c.kind == "tensorboard"] == [
        (str(events.parent.relative_to(tmp_path)), "tensorboard")]


def test_a_relative_root_in_a_working_directory_deleted_since_finds_nothing(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``steptable tail -f .`` in a run directory that is then removed (a relaunch's ``rm -rf``): the next discovery
    finds nothing under it (it raised FileNotFoundError making the root absolute: tail exited, an internal error)."""
    run = tmp_path / "run"
    write_rows(run / "metrics.jsonl", rew_rows(0, 2))
    monkeypatch.chdir(run)
    f = Follower(["."])
    f.scan()
    assert [list(s.steps) for s in f.stores.values()] == [[0, 1]]
    shutil.rmtree(run)
    assert discover(["."]) == []
    f.scan()
