"""Discovery (runs, arms, side files), the Follower (scan and threaded loops), preview_tail."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import steptable.ingest.files.wake as wake_mod
from steptable.ingest import Follower, discover, preview_tail
from tests.helpers import write_rows
from tests.ingest.helpers import rew_rows


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


def test_several_roots_prefix_run_ids(tmp_path: Path) -> None:
    write_rows(tmp_path / "a" / "x" / "metrics.jsonl", rew_rows(0, 1))
    write_rows(tmp_path / "b" / "x" / "metrics.jsonl", rew_rows(0, 1))
    f = Follower([tmp_path / "a", tmp_path / "b"])
    f.scan()
    assert sorted(f.stores) == [f"{tmp_path.as_posix()}/a/x/metrics.jsonl", f"{tmp_path.as_posix()}/b/x/metrics.jsonl"]


def test_a_file_given_directly(tmp_path: Path) -> None:
    path = tmp_path / "exp7" / "logs" / "odd_name.txt"
    path.parent.mkdir(parents=True)
    path.write_text("step:0 - a:1\n")
    f = Follower([path])
    f.scan()
    assert list(f.stores) == ["odd_name.txt"] and f.stores["odd_name.txt"].arm == "odd_name"


def test_run_created_after_start_is_picked_up(tmp_path: Path) -> None:
    write_rows(tmp_path / "logs" / "a" / "metrics.jsonl", rew_rows(0, 3))
    f = Follower([tmp_path / "logs"])
    assert f.scan() == {"a/metrics.jsonl"}
    write_rows(tmp_path / "logs" / "b" / "metrics.jsonl", rew_rows(0, 2))
    write_rows(tmp_path / "logs" / "a" / "metrics.jsonl", rew_rows(3, 4))
    assert f.scan() == {"a/metrics.jsonl", "b/metrics.jsonl"}
    assert len(f.stores["a/metrics.jsonl"]) == 4 and len(f.stores["b/metrics.jsonl"]) == 2


def run_loop(f: Follower) -> tuple[threading.Event, threading.Thread, list[set[str]], threading.Event]:
    stop = threading.Event()
    got = threading.Event()
    seen: list[set[str]] = []

    def on_change(ids: set[str]) -> None:
        seen.append(ids)
        got.set()

    t = threading.Thread(target=f.run, args=(stop, on_change), daemon=True)
    t.start()
    return stop, t, seen, got


def wait_for(cond: Any, got: threading.Event, timeout: float = 10.0) -> None:
    while not cond():
        got.clear()
        if cond():
            return
        assert got.wait(timeout), "no change reported"


@pytest.mark.parametrize("poll", [0.05, None], ids=["polling", "notify"])
def test_threaded_loop_follows_appends_and_new_runs(tmp_path: Path, poll: float | None) -> None:
    root = tmp_path / "logs"
    write_rows(root / "a" / "metrics.jsonl", rew_rows(0, 2))
    f = Follower([root], poll=poll, recheck=0.2 if poll else 60.0)  # notify: events alone must do it
    stop, t, seen, got = run_loop(f)
    try:
        wait_for(lambda: "a/metrics.jsonl" in f.stores and len(f.stores["a/metrics.jsonl"]) == 2, got)
        write_rows(root / "a" / "metrics.jsonl", rew_rows(2, 5))
        wait_for(lambda: len(f.stores["a/metrics.jsonl"]) == 5, got)
        write_rows(root / "b" / "metrics.jsonl", rew_rows(0, 1))
        wait_for(lambda: "b/metrics.jsonl" in f.stores and len(f.stores["b/metrics.jsonl"]) == 1, got)
    finally:
        stop.set()
        t.join(5)
    assert not t.is_alive() and f.mode == ("poll" if poll else "notify")
    assert {"a/metrics.jsonl"} in seen and f.errors == []


def test_notify_events_alone_deliver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No idle stat, no re-check: once the watch is up, appends and new runs arrive through events only."""
    monkeypatch.setattr(wake_mod, "IDLE_POLL", 60.0)
    root = tmp_path / "logs"
    write_rows(root / "a" / "metrics.jsonl", rew_rows(0, 1))
    f = Follower([root], recheck=60.0)
    stop, t, _, got = run_loop(f)
    try:
        wait_for(lambda: "a/metrics.jsonl" in f.stores, got)
        store = f.stores["a/metrics.jsonl"]
        for n in range(1, 100):  # until the watch is up (rows appended before it are seen by the next event)
            write_rows(root / "a" / "metrics.jsonl", rew_rows(n, n + 1))
            if got.wait(0.1) and len(store) == n + 1:
                break
            got.clear()
        assert len(store) == n + 1
        write_rows(root / "b" / "metrics.jsonl", rew_rows(0, 1))
        wait_for(lambda: "b/metrics.jsonl" in f.stores and len(f.stores["b/metrics.jsonl"]) == 1, got)
    finally:
        stop.set()
        t.join(5)


def test_notify_failure_falls_back_to_polling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import watchfiles

    def broken(*args: Any, **kw: Any) -> Any:
        raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(watchfiles, "watch", broken)
    write_rows(tmp_path / "a" / "metrics.jsonl", rew_rows(0, 1))
    f = Follower([tmp_path], recheck=0.2)
    stop, t, _, got = run_loop(f)
    try:
        wait_for(lambda: "a/metrics.jsonl" in f.stores, got)
        write_rows(tmp_path / "a" / "metrics.jsonl", rew_rows(1, 2))
        wait_for(lambda: len(f.stores["a/metrics.jsonl"]) == 2, got)
    finally:
        stop.set()
        t.join(5)
    assert f.mode == "poll" and "polling every" in f.errors[0]


def test_preview_tail_reads_only_the_end(tmp_path: Path) -> None:
    path = tmp_path / "r" / "metrics.jsonl"
    write_rows(path, rew_rows(0, 2000))
    store = preview_tail(path, max_bytes=4000)
    size = path.stat().st_size
    assert 0 < len(store) < 200 and store.steps[-1] == 1999 and store.bad == []
    assert store.steps[0] == 2000 - len(store) and store.meta["preview_offset"] > size - 4000
    assert len(preview_tail(path, max_bytes=10**9)) == 2000


def test_a_failing_source_does_not_stop_the_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_rows(tmp_path / "a" / "metrics.jsonl", rew_rows(0, 2))
    write_rows(tmp_path / "b" / "metrics.jsonl", rew_rows(0, 2))
    f = Follower([tmp_path])
    f.scan()
    broken = f._sources[tmp_path / "a" / "metrics.jsonl"]

    def boom() -> bool:
        raise RuntimeError("boom")

    monkeypatch.setattr(broken, "poll", boom)
    write_rows(tmp_path / "b" / "metrics.jsonl", rew_rows(2, 3))
    f.scan()
    assert len(f.stores["b/metrics.jsonl"]) == 3
    assert f.errors == [f"{tmp_path / 'a' / 'metrics.jsonl'}: internal error (RuntimeError: boom)"]


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
    assert discover([tmp_path], settled=fol._settled) == []  # nor read again by discovery while unchanged
    with open(log, "a") as f:
        f.write(noise * 10)
    fol.scan()
    assert fol.stores == {}  # more noise: still not a run, and only the new bytes were searched
    with open(log, "a") as f:
        f.write("".join(f"(main_task pid=1) step:{s} - critic/score/mean:0.5\n" for s in (1, 2)))
    fol.scan()
    assert [list(st.steps) for st in fol.stores.values()] == [[1, 2]]


def test_symlinks_in_the_logs_tree(tmp_path: Path) -> None:
    """A run linked into the logs directory is found; a file reached by two paths (wandb's latest-run, a link
    beside its target) is one run, under its real path; a loop ends; a dangling metrics link is said; a link deep
    inside a run (its data -> a dataset directory) is not walked."""
    logs, scratch = tmp_path / "logs", tmp_path / "scratch"
    write_rows(scratch / "exp42" / "metrics.jsonl", rew_rows(0, 2))
    logs.mkdir()
    (logs / "exp42").symlink_to(scratch / "exp42", target_is_directory=True)
    write_rows(logs / "wandb" / "run-1" / "files" / "wandb-history.jsonl", rew_rows(0, 3))
    (logs / "wandb" / "latest-run").symlink_to("run-1", target_is_directory=True)
    write_rows(logs / "ok" / "metrics.jsonl", rew_rows(0, 1))
    (logs / "ok" / "link.jsonl").symlink_to("metrics.jsonl")
    (logs / "ok" / "loop").symlink_to(logs / "ok", target_is_directory=True)
    (logs / "gone").mkdir()
    (logs / "gone" / "metrics.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    write_rows(scratch / "dataset" / "part-0" / "metrics.jsonl", rew_rows(0, 1))
    (logs / "ok" / "sub").mkdir()
    (logs / "ok" / "sub" / "data").symlink_to(scratch / "dataset", target_is_directory=True)
    errors: list[str] = []
    cands = discover([logs], on_error=lambda p, e: errors.append(f"{p.name}: {e}"))
    assert sorted(c.run_id for c in cands) == ["exp42/metrics.jsonl", "ok/metrics.jsonl",
                                              "wandb/run-1/files/wandb-history.jsonl"]
    assert errors == ["metrics.jsonl: a symbolic link that leads to no file"]
    fol = Follower([logs])
    fol.scan()
    assert sorted(fol.stores) == ["exp42/metrics.jsonl", "ok/metrics.jsonl", "wandb/run-1/files/wandb-history.jsonl"]


def test_links_never_hide_the_real_path(tmp_path: Path) -> None:
    """A link to a directory the walk reaches later (exp1/latest -> ../exp2/run3) leaves the run under its real
    path; a root reached through a link (~/logs -> /scratch/logs) still tells a file link from its target."""
    real = tmp_path / "scratch" / "logs"
    write_rows(real / "exp2" / "run3" / "metrics.jsonl", rew_rows(0, 2))
    (real / "exp1").mkdir()
    (real / "exp1" / "latest").symlink_to("../exp2/run3", target_is_directory=True)
    write_rows(real / "run1" / "metrics.jsonl", rew_rows(0, 2))
    (real / "current.jsonl").symlink_to("run1/metrics.jsonl")
    (tmp_path / "logs").symlink_to(real, target_is_directory=True)
    for root in (real, tmp_path / "logs"):
        assert sorted(c.run_id for c in discover([root])) == ["exp2/run3/metrics.jsonl", "run1/metrics.jsonl"]
    # a link into a directory the walk passes over (hidden) is the way to that run
    write_rows(real / ".store" / "run5" / "metrics.jsonl", rew_rows(0, 2))
    (real / "exp1" / "current").symlink_to("../.store/run5", target_is_directory=True)
    assert "exp1/current/metrics.jsonl" in {c.run_id for c in discover([real])}


def test_a_console_log_cut_inside_its_first_metrics_line_shows_when_the_line_ends(tmp_path: Path) -> None:
    log = tmp_path / "tz" / "train.log"
    log.parent.mkdir()
    log.write_text("loading the model\n(main_task pid=1) step:0 - critic/score/mean:0.")  # block-buffered stdout
    fol = Follower([tmp_path])
    fol.scan()
    assert fol.stores == {}
    with open(log, "a") as f:
        f.write("5 - actor/pg_loss:0.1\nsaving a checkpoint\n")
    fol.scan()
    assert [list(st.steps) for st in fol.stores.values()] == [[0]]
