"""steptable.ingest.files.walk: a logs tree walked with its links: a run linked in is found once, under its
real path."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from steptable.ingest import Follower, discover
from tests.helpers import write_rows
from tests.ingest.helpers import rew_rows


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


def test_a_latest_run_link_made_while_followed_adds_no_second_run(wandb_run: Path, tmp_path: Path) -> None:
    """wandb points ``wandb/latest-run`` at the new run directory at each ``init``: a link made while the tree is
    followed is no way to a second copy of the run (the event on it made the run followed twice, by both paths)."""
    root = tmp_path / "logs"
    shutil.copytree(wandb_run, root, symlinks=True)
    link = root / "wandb" / "latest-run"
    target = os.readlink(link)
    link.unlink()
    fol = Follower([root])
    fol.scan()
    assert len(fol.stores) == 1
    link.symlink_to(target, target_is_directory=True)
    fol.on_events({link})
    assert len(fol.stores) == 1
