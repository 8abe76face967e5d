"""steptable.ingest.files.wandbpieces: a W&B run resumed by later processes (``resume="allow"``: a directory per
process) is one run to every reader: its rows, its resumes and how each process ended, its tables, one seed."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from steptable.ingest.files.runindex import RunIndex
from steptable.ingest.files.wandbpieces import pieces
from tests.helpers import run_cli
from tests.ingest.writers import read_once, resumable_run

pytest.importorskip("wandb")


def _files(root: Path, run_id: str) -> list[Path]:
    return sorted(root.glob(f"wandb/*run-*-{run_id}/run-{run_id}.wandb"))


def test_the_files_of_one_run_id_are_its_pieces_in_order(wandb_resumed: Path, tmp_path: Path) -> None:
    """Each file of a resumed run names every piece, the first process's first; an id that only ends like it, a
    directory made before its file, and a file named otherwise are not pieces."""
    first, second = _files(wandb_resumed, "g1")
    assert pieces(first) == pieces(second) == [first, second]
    assert pieces(_files(wandb_resumed, "b1")[0]) == _files(wandb_resumed, "b1")
    copy = tmp_path / "wandb"
    shutil.copytree(wandb_resumed / "wandb", copy, symlinks=True)
    (copy / "offline-run-20991231_235959-g1").mkdir()  # a resume starting: no run file yet
    (copy / "offline-run-20000101_000000-xg1").mkdir()  # another run's id that ends like this one's
    (copy / first.parent.name / "run-g1.wandb").rename(copy / first.parent.name / "other.wandb")
    copied = copy / second.parent.name / second.name
    assert pieces(copied) == [copied]


def test_a_resumed_run_is_one_run_with_its_resume_and_how_the_first_process_ended(
        wandb_resumed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Read as three runs before (the crashed piece and its resume, each its own), compare counted the resumed
    arm twice and cut its window at the crash. Now: one run each, steps as the resume left them, the crash told
    at the step resumed at, a SIGKILLed process as one that stopped without a close."""
    f = read_once(wandb_resumed)
    by_arm = {st.arm: st for st in f.stores.values()}
    assert sorted(by_arm) == ["base", "grpo", "oom"]
    assert list(by_arm["grpo"].steps) == list(range(80))
    rc, out, err = run_cli(["runs", str(wandb_resumed)], capsys)
    assert rc == 0 and len(out.splitlines()) == 3 and "resumed 40" in out and "resumed 2500" in out, out + err
    rc, out, err = run_cli(["tail", str(wandb_resumed), "--alerts-only"], capsys)
    ends = [line for line in out.splitlines() if "resumed at this step" in line]
    assert ends == ["E [grpo] step 40 run ended with exit_code_1; resumed at this step",
                    "W [oom] step 2500 run stopped without a close; resumed at this step"], out + err
    assert rc == 1
    rc, out, err = run_cli(["compare", str(wandb_resumed), "--baseline", "base"], capsys)
    assert rc == 0 and "grpo 1 seed" in out and "2 seeds" not in out, out + err


def test_a_resumed_runs_tables_are_at_their_steps_in_each_process(wandb_resumed: Path) -> None:
    from steptable.app.sidefiles import build_index, side_paths, table_steps

    (store,) = [st for st in read_once(wandb_resumed).stores.values() if st.arm == "grpo"]
    idx = build_index(side_paths(store.side_files), table_steps(store.meta))
    assert idx.steps == [45, 60]
    assert [s.completion for s in idx.samples(60)] == ["c60"]


def test_a_run_file_named_on_the_command_line_is_read_alone(wandb_resumed: Path) -> None:
    first, _ = _files(wandb_resumed, "g1")
    (store,) = read_once(first).stores.values()
    assert list(store.steps) == list(range(50))


def test_a_resume_that_starts_while_the_run_is_followed_joins_it(tmp_path: Path) -> None:
    """A follower that read the first process's file reads the resume's into the same run (not a second run) on
    the new file's event, and the run no longer reads ended: its first process's end is an earlier one."""
    from steptable.ingest import Follower
    from steptable.table import runinfo

    resumable_run(tmp_path, "grpo", "g1", range(0, 30), "crash")
    f = Follower([tmp_path])
    f.scan()
    (run,) = f.stores
    assert runinfo.ended_by(f.stores[run].meta.get("runinfo")) == "exit_code_1"
    resumable_run(tmp_path, "grpo", "g1", range(20, 40), "ok")
    assert f.on_events({_files(tmp_path, "g1")[1]}) == {run}  # (the event of the resume's file: the run read)
    assert list(f.stores) == [run]
    store = f.stores[run]
    assert list(store.steps) == list(range(40))
    info = store.meta["runinfo"]
    assert runinfo.ended_by(info) is None and runinfo.earlier(info)[0][:2] == ("exit_code_1", 20)


def test_a_resume_seen_before_its_run_record_joins_the_run(wandb_resumed: Path, tmp_path: Path) -> None:
    """The event of a resume's new file comes while it holds wandb's header alone (a process just started): the file
    waits for its run record, then joins the run (it was a second run of its own: every row shown twice)."""
    from steptable.ingest import Follower

    first, second = _files(wandb_resumed, "g1")
    root = tmp_path / "run"
    shutil.copytree(first.parent, root / "wandb" / first.parent.name)
    f = Follower([root])
    f.scan()
    (run,) = f.stores
    new = root / "wandb" / second.parent.name / second.name
    new.parent.mkdir()
    data = second.read_bytes()
    new.write_bytes(data[:7])  # (wandb's header: the run record is not written yet)
    f.on_events({new.parent, new})
    assert list(f.stores) == [run]
    new.write_bytes(data)
    f.on_events({new})
    assert list(f.stores) == [run] and list(f.stores[run].steps) == list(range(80))


def test_a_resume_whose_run_record_is_past_the_head_read_is_not_hidden(wandb_resumed: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A run record longer than the head read for it (a config of more than HEAD_BYTES: a model's id2label of
    tens of thousands of classes) is never found there: the pieces are read each alone, not waited for (they were
    undecided for good, and the run never shown)."""
    from steptable.ingest.files import wandbpieces

    monkeypatch.setattr(wandbpieces, "HEAD_BYTES", 64)  # (shorter than the fixture's run records)
    monkeypatch.setattr(wandbpieces, "_projects", {})
    stores = read_once(wandb_resumed).stores.values()
    assert sorted({st for s in stores if s.arm == "grpo" for st in s.steps}) == list(range(80))


def test_a_resume_whose_run_record_is_damaged_is_read_and_its_damage_told(wandb_resumed: Path,
                                                                         tmp_path: Path) -> None:
    """A piece whose run record is damaged (its checksum fails: the record is skipped) never gets one: it is read
    alone and the damage reported (it was undecided for good: its rows hidden, nothing said)."""
    second = _files(wandb_resumed, "g1")[1]
    copy = tmp_path / "wandb"
    shutil.copytree(wandb_resumed / "wandb", copy, symlinks=True)
    damaged = copy / second.parent.name / second.name
    data = bytearray(damaged.read_bytes())
    data[data.index(b"grpo")] ^= 0xFF  # (the run's name, in its run record)
    damaged.write_bytes(bytes(data))
    f = read_once(tmp_path)
    assert sorted({st for s in f.stores.values() if s.path == damaged for st in s.steps}) == list(range(40, 80))
    assert any("checksum" in str(bad) for bad in f.problems_after(0)[1])


def test_a_sweep_list_sees_a_resume_write_on(wandb_resumed: Path, tmp_path: Path) -> None:
    """The run list's entry of a resumed run counts every piece's bytes and its newest change: a resume writing
    is a run that changed, not an idle first file."""
    root = tmp_path / "sweep"
    shutil.copytree(wandb_resumed, root, symlinks=True)
    index: RunIndex[int] = RunIndex([root], lambda store, cand: len(store))
    index.refresh()
    (entry,) = [e for e in index.runs.values() if "g1" in e.cand.run_id]
    assert entry.digest == 80 and entry.size == sum(p.stat().st_size for p in _files(root, "g1"))


def test_a_later_directory_of_a_resumed_run_named_is_read_alone(wandb_resumed: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The directory wandb printed for the resume (its first piece outside what was named): an internal error
    (exit 70) before; now that process's rows alone, as a file named is read."""
    _, second = _files(wandb_resumed, "g1")
    rc, out, err = run_cli(["runs", str(second.parent)], capsys)
    assert rc == 0 and len(out.splitlines()) == 1 and "steps 40-79" in out, out + err


def test_one_id_in_two_projects_is_two_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fixed id reused in another project is another run (merged before: one of them vanished)."""
    resumable_run(tmp_path, "base", "baseline", range(0, 30), "ok", project="p")
    resumable_run(tmp_path, "other", "baseline", range(0, 20), "ok", project="q")
    f = read_once(tmp_path)
    assert sorted((st.arm, len(st)) for st in f.stores.values()) == [("base", 30), ("other", 20)]
    rc, out, err = run_cli(["runs", str(tmp_path)], capsys)
    assert rc == 0 and len(out.splitlines()) == 2 and "resumed" not in out, out + err


def test_a_resume_whose_file_comes_after_its_directory_is_read(wandb_resumed: Path, tmp_path: Path) -> None:
    """The resume's directory was made, and looked at, before its run file was written (a slow file system): the
    file is read into the run once it is there (before, the run's listing was kept by the wandb directory's time,
    which the file's creation does not change)."""
    from steptable.ingest import Follower

    first, second = _files(wandb_resumed, "g1")
    root = tmp_path / "run"
    shutil.copytree(first.parent, root / "wandb" / first.parent.name)
    later = root / "wandb" / second.parent.name
    later.mkdir()
    os.utime(root / "wandb", (time.time() - 5, time.time() - 5))  # (the directory made a while ago)
    f = Follower([root])
    f.scan()
    (run,) = f.stores
    assert list(f.stores[run].steps) == list(range(50))
    shutil.copy(second, later / second.name)  # (the wandb directory's time stays as it was)
    f.scan()
    assert list(f.stores) == [run] and list(f.stores[run].steps) == list(range(80))


def test_a_later_file_found_rewritten_reads_the_run_again_in_order(wandb_resumed: Path, tmp_path: Path) -> None:
    """The resume's file replaced by a copy while followed: the run is read again from its first file (its rows
    after the first's, one earlier end), not from the file found replaced."""
    from steptable.ingest import Follower
    from steptable.table import runinfo

    root = tmp_path / "run"
    shutil.copytree(wandb_resumed / "wandb", root / "wandb", symlinks=True)
    _, second = _files(root, "g1")
    f = Follower([root])
    f.scan()
    (store,) = [st for st in f.stores.values() if st.arm == "grpo"]
    copy = second.with_name("copy")
    shutil.copy(second, copy)
    os.replace(copy, second)
    f.scan()
    (store,) = [st for st in f.stores.values() if st.arm == "grpo"]
    assert list(store.steps) == list(range(80)) and store.resumes[-1:] == [40]
    assert [e[:2] for e in runinfo.earlier(store.meta["runinfo"])] == [("exit_code_1", 40)]


def test_a_resumed_run_with_a_large_config_is_one_run(tmp_path: Path) -> None:
    """Its run record (the config: a trainer's arguments, here 200 KB) passed the first 64 KB of the file, so its
    project was never found and its resume stayed a run of its own."""
    from tests.ingest.writers import run_writer

    for first, last in ((0, 20), (10, 30)):
        run_writer(f"""
            import wandb
            run = wandb.init(project="p", name="big", id="big1", resume="allow",
                             config={{"args": "x" * 200_000, "lr": 1e-5}})
            for s in range({first}, {last}):
                run.log({{"loss": 1.0 / (s + 1)}}, step=s)
            run.finish()
        """, {"WANDB_DIR": str(tmp_path)})
    f = read_once(tmp_path)
    assert [list(st.steps) for st in f.stores.values()] == [list(range(30))]
