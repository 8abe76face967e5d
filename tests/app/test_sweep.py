"""The sweep's index in the watch app (steptable.app.sweep): the runs found, their digests read by the index's own
thread, one IndexChanged posted until the UI has taken it, the status line, the metric columns a list starts with."""

from __future__ import annotations

import time
from itertools import pairwise
from pathlib import Path
from typing import Any

from steptable.app.runrows import ListState
from steptable.app.sweep import IndexChanged, SweepIndex, default_metrics
from tests.app.sweephelpers import index_running, read_all, write_sweep


def test_the_index_thread_reads_every_run(tmp_path: Path) -> None:
    write_sweep(tmp_path, runs=5)
    index = SweepIndex([str(tmp_path)], period=0.05)
    assert index.discover() == 5
    assert index.line(time.time()).endswith("(reading 5 more)")  # nothing read yet: known by their files
    posted: list[Any] = []
    read_all(index, posted.append)
    assert posted and all(isinstance(m, IndexChanged) for m in posted)
    assert len(posted) <= 2  # the first post, then one more at most: the UI never took the first
    assert index.line(time.time()) == "5 runs: 3 live, 1 ended, 1 crashed; 1 with errors"
    assert default_metrics(index.entries()) == ["reward", "loss"]  # the ranking keys the runs log
    assert default_metrics(index.entries(), most=1) == ["reward"]


def test_the_stat_pass_is_spaced_by_what_it_costs(tmp_path: Path) -> None:
    """A pass over every run that takes long (thousands of runs) comes at most once per SHARE times its length:
    the index does not hold the GIL against the UI for more than 1/SHARE of the time."""
    import steptable.app.sweep as sweep_mod

    write_sweep(tmp_path, runs=3)
    index = SweepIndex([str(tmp_path)], period=0.01)
    index.discover()
    passes: list[float] = []
    real = index.index.refresh

    def slow(budget: float | None = None, only: Any = None) -> set[str]:
        if only is None:
            passes.append(time.monotonic())
            time.sleep(0.02)  # (as 2,000 stats take)
        return real(budget, only)

    index.index.refresh = slow  # type: ignore[method-assign]
    with index_running(index, lambda m: None):
        time.sleep(1.0)
    gaps = [b - a for a, b in pairwise(passes)]
    assert passes and all(g >= sweep_mod.SHARE * 0.02 for g in gaps)  # not every 0.01 s
    assert len(passes) <= 3


def test_the_ui_takes_the_index_before_it_reads_it(tmp_path: Path) -> None:
    """The index posts again for a run it reads while the list is being made (taken first, then read): a change
    then is never lost until some other change comes."""
    from steptable.app.sweep import Sweep

    write_sweep(tmp_path, runs=3)
    index = SweepIndex([str(tmp_path)])
    index.discover()
    index._posted.set()  # an IndexChanged on its way to the UI
    seen: list[bool] = []

    class Screen:
        is_attached = True

        state = ListState(metrics=["loss"])

        def refresh_list(self) -> None:
            seen.append(index._posted.is_set())  # a change now would post again

        def call_after_refresh(self, callback: Any) -> None:
            callback()

    class Host:
        feed = type("F", (), {"sweep": index})()

    sweep = Sweep(Host())  # type: ignore[arg-type]
    sweep.screen = Screen()
    sweep.changed()
    assert seen == [False]


def test_a_change_after_a_post_the_ui_took_at_once_posts_again(tmp_path: Path) -> None:
    """The UI may take a post before ``post`` returns in the index's thread (it had the GIL meanwhile): a run poked
    after that still brings a post of its own, so it reaches the list."""
    from steptable.ingest.files.discover import discover
    from tests.app.sweephelpers import write_run

    write_sweep(tmp_path, runs=3)
    index = SweepIndex([str(tmp_path)])
    index.discover()
    posts: list[Any] = []

    def take_at_once(message: Any) -> None:
        posts.append(message)
        index.taken()  # (what the UI's handler does first, here before the index's thread goes on)

    with index_running(index, take_at_once):
        deadline = time.monotonic() + 10
        while (index.index.pending() or not posts) and time.monotonic() < deadline:
            time.sleep(0.01)
        before = len(posts)
        new = write_run(tmp_path, "zz_new", 1e-5, steps=3, end="ended")
        for cand in discover([tmp_path]):
            if cand.path.parent == new:
                index.poke(cand)
        while len(posts) == before and time.monotonic() < deadline:
            time.sleep(0.01)
    assert len(posts) > before
    assert any(e.run_id.startswith("zz_new/") and e.digest is not None for e in index.entries())


def test_a_failure_of_the_index_thread_is_posted(tmp_path: Path) -> None:
    """A bug of ours that ends the index's thread is said on screen, not left as a list that stopped changing."""
    from steptable.app.messages import FeedProblem

    write_sweep(tmp_path, runs=3)
    index = SweepIndex([str(tmp_path)])
    index.discover()

    def broken(budget: float | None = None, only: Any = None) -> set[str]:
        raise KeyError("run")

    index.index.refresh = broken  # type: ignore[method-assign]
    posts: list[Any] = []
    with index_running(index, posts.append):
        deadline = time.monotonic() + 10
        while not posts[1:] and time.monotonic() < deadline:  # (its first post, then the problem's)
            time.sleep(0.01)
    problems = [m for m in posts if isinstance(m, FeedProblem)]
    assert len(problems) == 1 and "KeyError" in problems[0].text


def test_copies_of_one_training_are_left_out_of_the_list(hf_every_tracker: Path) -> None:
    """Four trainings reported to W&B, trackio and TensorBoard with checkpoints: 16 files, 4 runs in the list."""
    index = SweepIndex([str(hf_every_tracker)], period=0.05)
    index.discover()
    read_all(index, lambda m: None)
    assert len(index.index.runs) == 16  # (trackio's database: a run per run name once read)
    assert sorted((e.digest.kind, e.digest.arm) for e in index.entries() if e.digest is not None) == [
        ("wandb", name) for name in ("hi_seed0", "hi_seed1", "lo_seed0", "lo_seed1")]
    assert index.line(time.time()).endswith(" · 12 copies of these runs by other loggers left out")
