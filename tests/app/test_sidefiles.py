"""steptable.app.sidefiles: generations side files indexed and read per step (retrain, tinker rollouts, MaxEnt
rich_completions, W&B tables, trackio traces, TensorBoard text), hostile rows (steps that are not a list, numbers
past range) and bad lines."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from steptable.app.sidefiles import SideIndex, build_index, side_paths, table_steps
from tests.app.helpers import HOSTILE, write_generations, write_side_file

pytestmark = pytest.mark.anyio


def test_a_steps_field_that_is_not_a_list(tmp_path: Path) -> None:
    idx = build_index([write_side_file(tmp_path, '{"step": 10, "steps": 4, "reward": 1.0, "response": "r"}')])
    (s,) = idx.samples(10)
    assert s.completion == "" and "rollout" in s.title


def test_an_integer_reward_beyond_the_double_range(tmp_path: Path) -> None:
    idx = build_index([write_side_file(tmp_path, '{"step": 10, "prompt": "p", "completion": "c", "reward": 1'
                                             + "0" * 400 + "}")])
    (s,) = idx.samples(10)
    assert s.reward == math.inf and s.completion == "c"


def test_a_step_with_more_digits_than_int_converts(tmp_path: Path) -> None:
    idx = build_index([write_side_file(tmp_path, '{"step": 1' + "0" * 5000 + ', "completion": "c", "reward": 1}')])
    assert idx.steps == [0]  # the line goes with the rows before it; its step reads as a float: one cell, not the row
    good, kept = idx.samples(0)
    assert good.completion == "c" and kept.completion == "c" and kept.reward == 1


def test_generations_index_and_samples(tmp_path: Path) -> None:
    path = write_generations(tmp_path)
    with open(path, "ab") as fh:
        fh.write(b'{"step": 30, "completion": "partial')  # the writer is mid-line: not indexed yet
    idx = build_index([path])
    assert idx.steps == [0, 10, 20]
    assert idx.nearest(15) == 10 and idx.nearest(-5) == 0 and idx.nearest(99) == 20
    assert idx.nearest(10) == 10 and idx.nearest(16) == 20 and idx.nearest(4) == 0  # the closest, before or after
    assert SideIndex().nearest(5) is None
    samples = idx.samples(10)
    assert len(samples) == 2 and samples[0].completion == HOSTILE and samples[0].reward == 1.0
    assert samples[0].extra == "12 tokens"
    assert side_paths({"generations": [path], "checkpoints": [tmp_path / "checkpoints.jsonl"]}) == [path]


def test_tinker_rollout_summaries(tmp_path: Path) -> None:
    d = tmp_path / "iteration_000012"
    d.mkdir()
    rec = {"split": "train", "group_idx": 0, "traj_idx": 1, "total_reward": 0.5, "final_reward": 0.5,
           "trajectory_metrics": {"correct": 1}, "steps": [
               {"step_idx": 0, "ob_len": 10, "ac_len": 4, "reward": 0.5, "logs": {"answer": "42\x1b[2J"}}]}
    (d / "train_rollout_summaries.jsonl").write_text(json.dumps(rec) + "\nnot json\n")
    idx = build_index(side_paths({"rollout_summaries": [d / "train_rollout_summaries.jsonl"]}))
    assert idx.steps == [12]
    good, bad = idx.samples(12)
    assert good.reward == 0.5 and "group 0 traj 1" in good.title and "answer: 42" in good.completion
    assert good.extra == "correct=1"
    assert bad.reward is None and "bad line" in bad.title
    assert idx.samples(13) == []


def test_rich_completions_tables_are_generations(tmp_path: Path) -> None:
    """MaxEnt-GRPO's rich_completions/<table>_step_N.json ({columns, data}, bare NaN allowed) reach the viewer."""
    from tests.trainer_logs import write_maxent_state

    out = write_maxent_state(tmp_path / "maxent")
    rich = out["completions"]
    extra = rich.parent / "completions_step_000004.json"
    extra.write_text('{"columns": ["step", "prompt", "completion", "reward_total", "advantage"],'
                     ' "data": [[4, "p", "c", NaN, 0.5], "not a row"]}')
    (rich.parent / "completions_step_000005.json").write_text('[1, 2]')
    paths = side_paths({"rich_completions": [rich, extra, rich.parent / "completions_step_000005.json"]})
    idx = build_index(paths)
    assert idx.steps == [2, 4, 5]
    a, b = idx.samples(2)
    assert (a.prompt, a.completion, a.reward, b.completion, b.reward) == ("2+2?", "4", 1.0, "9", 0.0)
    good, bad = idx.samples(4)
    assert good.reward is not None and math.isnan(good.reward) and "advantage 0.5" in good.extra
    assert "not a list" in bad.title
    assert "not a {columns, data} table" in idx.samples(5)[0].title


def test_generations_values_and_bad_lines(tmp_path: Path) -> None:
    """A reward logged as Infinity shows as inf (the decoder spells it as text); a bad line says where it is."""
    path = tmp_path / "generations.jsonl"
    path.write_bytes(b'{"step": 1, "completion": "a", "reward": Infinity}\n{"step": 1, oops\n')
    good, bad = build_index([path]).samples(1)
    assert good.reward == math.inf
    second = path.read_bytes().index(b"\n") + 1
    assert bad.title == f"generations.jsonl: bad line at byte {second}"


def test_a_rollout_dump_indexed_while_verl_wrote_it_is_read_whole_once_written(tmp_path: Path) -> None:
    """verl writes a step's dump line by line: indexed while it was half-written (cut inside a line), the step is
    read as the file is when shown, all of its samples and no bad line; shown while still cut, the line being
    written is passed over, not reported."""
    from tests.ingest.dumpwriters import write_verl_dumps

    write_verl_dumps(tmp_path / "done", range(3, 4))
    whole = (tmp_path / "done" / "rollouts" / "3.jsonl").read_bytes()
    path = tmp_path / "exp" / "rollouts" / "3.jsonl"
    path.parent.mkdir(parents=True)
    cut = whole.index(b"\n", len(whole) // 2) - 5  # (inside a line, after some whole ones)
    path.write_bytes(whole[:cut])
    idx = build_index(side_paths({"generations": [path]}))
    assert idx.steps == [3]
    early = idx.samples(3)
    assert len(early) == whole[:cut].count(b"\n") and all("bad line" not in s.title for s in early)
    with open(path, "ab") as fh:
        fh.write(whole[cut:])
    late = idx.samples(3)
    assert len(late) == whole.count(b"\n") == 12 and all("bad line" not in s.title for s in late)
    assert [s.completion for s in late] == [f"answer {i}" for i in range(12)]


def _wandb_index(root: Path) -> SideIndex:
    from tests.ingest.writers import only, read_once

    store = only(read_once(root / "wandb"))
    return build_index(side_paths(store.side_files), table_steps(store.meta))


def test_trls_completions_logged_to_wandb_are_at_their_training_steps(trl_wandb_run: Path) -> None:
    """W&B names each table by its count of log calls (completions_8, _17...); the record that logs it carries the
    trainer's step. Each step's samples once (the last table, logged again at the end, is the same table), with
    their reward functions summed as TRL's parquet is read."""
    idx = _wandb_index(trl_wandb_run)
    assert idx.steps == [1, 2, 3]
    for step in idx.steps:
        samples = idx.samples(step)
        assert len(samples) == 4 and all(s.step == step for s in samples)  # 4 completions a step
        assert all(s.reward is not None and "length_reward" in s.extra and "advantage" in s.extra for s in samples)
    names = sorted(p.name for p in (next(trl_wandb_run.glob("wandb/offline-run-*")) / "files").rglob("*.table.json"))
    assert len(names) == 4 and not {n.split("_")[1] for n in names} <= {"1", "2", "3"}  # (what the names say)


def test_a_wandb_table_with_a_score_and_no_reward_shows_its_score(tmp_path: Path) -> None:
    """A wandb.Table of prompt, completion, score: each sample shows its score, and the viewer's heading claims no
    reward (it read "reward nan" with the score nowhere)."""
    pytest.importorskip("wandb")
    from steptable.app.screens.generations import sample_text
    from tests.ingest.writers import run_writer

    run_writer("""
        import wandb
        run = wandb.init(project="p", name="scored")
        run.log({"loss": 0.5}, step=0)
        run.log({"generations": wandb.Table(columns=["prompt", "completion", "score"],
                                            data=[["p1", "c1", 1.0], ["p2", "c2", 0.25]])}, step=1)
        run.finish()
    """, {"WANDB_DIR": str(tmp_path)})
    idx = _wandb_index(tmp_path)
    samples = idx.samples(idx.steps[-1])
    assert [(s.reward, s.extra) for s in samples] == [(None, "score 1"), (None, "score 0.25")]
    text = sample_text(samples, "scored", idx.steps[-1])[0].plain
    assert "score 1" in text and "reward" not in text


def test_verls_validation_generations_logged_to_wandb_are_each_steps_own(verl_wandb_run: Path) -> None:
    """verl logs val/generations (a folder under media/table) with step=N, which W&B names N-1, and each time with
    every earlier validation's row, one row a step of input_i, output_i, score_i columns: each validation step shows
    its own samples, one per column triple, scored."""
    _each_validation_steps_samples(_wandb_index(verl_wandb_run))


def _each_validation_steps_samples(idx: SideIndex, title: Callable[[int], str] | None = None) -> None:
    """verl's validation samples as tests.ingest.dumpwriters logs them: each at its step, in order, scored (and
    titled ``title(i)``)."""
    from tests.ingest.dumpwriters import VERL_VAL_SAMPLES, VERL_VAL_STEPS

    assert idx.steps == list(VERL_VAL_STEPS)
    for step in VERL_VAL_STEPS:
        samples = idx.samples(step)
        assert [(s.prompt, s.completion, s.reward) for s in samples] == [
            (f"question {i} at {step}", f"answer {i} at {step}", float(i % 2)) for i in range(VERL_VAL_SAMPLES)]
        if title is not None:
            assert [s.title for s in samples] == [title(i) for i in range(VERL_VAL_SAMPLES)]


def test_verls_validation_generations_logged_to_trackio_are_each_steps_traces(verl_trackio_run: Path) -> None:
    """verl logs each validation sample to trackio as a Trace (user: input, assistant: output, metadata score) under
    val/generations with step=N: the run's store names its traces, each validation step shows its own samples."""
    from steptable.ingest.readers.trackiotraces import has_traces
    from tests.ingest.writers import only, read_once

    store = only(read_once(verl_trackio_run))
    run = store.meta["trackio_run"]
    assert run == "verl-exp" and has_traces(store.path, run) and not has_traces(store.path, "another")
    idx = build_index(side_paths(store.side_files), traces=(store.path, run))
    _each_validation_steps_samples(idx, lambda i: f"val/generations #{i}")


def test_hostile_traces_are_shown_as_what_they_are(tmp_path: Path) -> None:
    """Traces trackio itself stored whose messages are no conversation (a string, parts, a number), whose metadata
    is no object, or whose score is text: each is a sample that says what it holds; none takes the index down."""
    pytest.importorskip("trackio")
    from tests.ingest.writers import run_writer

    run_writer("""
        import trackio
        trackio.init(project="p", name="r")
        trackio.log({"loss": 1.0}, step=1)
        trackio.log({"t": [trackio.Trace(messages=[{"role": "system", "content": "be brief"},
                                                   {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                                                   {"role": "assistant", "content": "\\x1b[31mred"}],
                                         metadata={"score": "high", "len": 3}),
                           trackio.Trace(messages=[], metadata={})]}, step=1)
        trackio.finish()
    """, {"TRACKIO_DIR": str(tmp_path)})
    idx = build_index([], traces=(tmp_path / "p.db", "r"))
    first, empty = idx.samples(1)
    assert first.prompt == "system: be brief\nuser: hi" and first.completion == "\x1b[31mred"
    assert first.reward is None and first.extra == "len 3"  # (text is made inert by the viewer, as every sample's)
    assert (empty.prompt, empty.completion, empty.reward) == ("", "", None)
    assert build_index([], traces=(tmp_path / "p.db", "nobody")).steps == []
    (gone,) = SideIndex(where={1: [(tmp_path / "gone.db", -1, 0)]}, steps=[1], trace_run="r").samples(1)
    assert "traces unreadable" in gone.title


def test_verls_validation_generations_logged_to_tensorboard_are_each_steps_samples(verl_tensorboard_run: Path) -> None:
    """verl writes each validation step's samples as one markdown text (add_text, by a second SummaryWriter in the
    run's directory): the run's reader notes where each is, and each section is a sample with its score."""
    from tests.ingest.writers import only, read_once

    store = only(read_once(verl_tensorboard_run))
    assert "actor/pg_loss" in store.keys and all(k != "val/generations" for k in store.keys)
    idx = build_index([], texts=store.meta["texts"])
    _each_validation_steps_samples(idx, lambda i: f"val/generations sample {i + 1}")


def test_tensorboard_text_that_is_not_verls_is_one_sample_and_a_replaced_file_says_so(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    from tests.ingest.writers import only, read_once

    w = SummaryWriter(str(tmp_path / "run"))
    w.add_scalar("loss", 1.0, 5)
    w.add_text("notes", "### Sample 1\nnot after a blank line, \x1b]0;title\x07 kept raw", 5)
    w.add_text("notes", "\n\n### Sample 1\n**Input:** q\n\n**Output:** a", 6)  # (no score: shown as it is)
    w.close()
    store = only(read_once(tmp_path))
    idx = build_index([], texts=store.meta["texts"])
    (five,) = idx.samples(5)
    assert five.title == "notes" and five.completion.startswith("### Sample 1") and five.reward is None
    (six,) = idx.samples(6)
    assert six.title == "notes sample 1" and "**Output:** a" in six.completion
    (path,) = (tmp_path / "run").glob("events.out.tfevents.*")
    data = path.read_bytes()
    path.write_bytes(data[:100])  # (replaced by a shorter file since it was read)
    (gone,) = idx.samples(5)
    assert "unreadable" in gone.title and gone.completion


def test_trls_completions_logged_to_trackio_are_at_their_training_steps(trl_trackio_run: Path) -> None:
    """TRL logs its completions to trackio as a table alone, at trackio's count of log calls (steps 4, 6, 8 of a
    3-step run: they were blank rows) and the last again at the end: no rows of the run's; each table at the step
    its rows name, its completions grouped by prompt with their reward functions summed, the last step's once."""
    from tests.ingest.writers import only, read_once

    store = only(read_once(trl_trackio_run))
    assert list(store.steps) == [0, 1, 2, 3]  # (step 0: TRL's first profiling timings)
    tables = store.meta["trackio_tables"]
    assert [t[2] for t in tables] == [1, 2, 3, 3] and {t[1] for t in tables} == {"completions"}
    idx = build_index([], traces=(store.path, store.meta["trackio_run"]), tables=tables)
    assert idx.steps == [1, 2, 3]
    for step in idx.steps:
        samples = idx.samples(step)
        assert len(samples) == 4 and all(s.title == "completion" and s.group for s in samples)
        assert all(s.reward is not None and "length_reward" in s.extra and "advantage" in s.extra for s in samples)


def test_hostile_trackio_tables_are_shown_as_what_they_are(tmp_path: Path) -> None:
    """A table of no trainer's shape trackio itself stored: each row shown as its fields; a table whose metrics row
    is gone (the database replaced since): nothing."""
    pytest.importorskip("trackio")
    from tests.ingest.writers import only, read_once, run_writer

    run_writer("""
        import trackio
        trackio.init(project="p", name="r")
        trackio.log({"loss": 1.0}, step=1)
        trackio.log({"t": trackio.Table(columns=["a"], data=[[1], [2]])}, step=2)
        trackio.log({"loss": 0.5}, step=3)
        trackio.log({"u": trackio.Table(columns=["step", "b"], data=[[[1], {"x": 1}], [None, "z"]])}, step=4)
        trackio.finish()
    """, {"TRACKIO_DIR": str(tmp_path)})
    store = only(read_once(tmp_path))
    (row, key, step), (_, other, odd) = store.meta["trackio_tables"]
    assert list(store.steps) == [1, 3] and (key, step, other, odd) == ("t", 2, "u", 4)  # (u: its row's step)
    idx = build_index([], traces=(store.path, "r"), tables=[(row, key, step), (row + 100, key, 9)])
    assert [s.completion for s in idx.samples(2)] == ["a: 1", "a: 2"]
    assert idx.samples(9) == []  # (a row that is gone holds no table)
