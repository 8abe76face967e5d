"""steptable.schemafiles.resolve: the schema each run on disk is shown with: user files that extend or
override built-ins, local files before config files, edits picked up, files that cannot be used, grouping by
schema."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from steptable.ingest import Follower, load
from steptable.schemafiles.resolve import by_schema, detect, get_schema, load_schema_file
from steptable.schemas import Schema, SchemaFileError, layout
from steptable.schemas import user as user_module
from tests.helpers import plain_run, write, write_rows
from tests.trainer_logs import write_lightning, write_verl

pytestmark = pytest.mark.usefixtures("xdg")  # (no user's schema directory leaks in)


MINE = """
[schema]
name = "mine"
extends = "verl"
description = "verl with my loss"
hide = ["timing_per_token_ms/*"]
drop = ["actor/lr"]

[match]
files = ["*.jsonl"]
keys = ["my/loss"]

[[columns]]
key = "my/loss"
width = 7
header = "myloss"
fmt = ".3f"
desc = "my own loss"
better = "lower"
after = "actor/pg_loss"

[[columns]]
key = "critic/score/mean"
header = "task_score"

[[rules]]
pattern = "my/*"
desc = "mine: {key}"
promote = true
"""


def test_extend_override_insert_drop_hide(tmp_path: Path) -> None:
    s = load_schema_file(write(tmp_path / "mine.toml", MINE))
    assert s.name == "mine" and s.source.endswith("mine.toml") and s.description == "verl with my loss"
    keys = [c.key for c in s.cols]
    assert keys[:5] == ["step", "critic/score/mean", "critic/rewards/mean", "actor/pg_loss", "my/loss"]
    assert "actor/lr" not in keys
    score = s.col("critic/score/mean")
    assert score is not None and score.header == "task_score" and score.width == 10 and score.better == "higher"
    mine = s.col("my/loss")
    assert mine is not None and (mine.width, mine.fmt, mine.better, mine.desc) == (7, ".3f", "lower", "my own loss")
    assert s.hidden("timing_per_token_ms/gen") and not s.hidden("timing_s/gen")
    assert s.rule("my/other") is not None and s.rule("val-core/x/mean@1") is not None  # own rules, then the base's
    assert s.match(Path("a/b.jsonl"), ["step", "my/loss"]) == 1.0
    assert s.match(Path("a/b.log"), ["step", "my/loss"]) == 0.0
    assert s.match(Path("a/b.jsonl"), ["step", "actor/pg_loss"]) == 0.0


def test_local_file_beats_builtin_and_applies_to_its_runs(tmp_path: Path) -> None:
    path = write_verl(tmp_path / "logs" / "proj" / "exp.jsonl")
    run = next(iter(load(path).values()))
    assert detect(run.path, run.keys).name == "verl"
    write(tmp_path / "logs" / "steptable.toml", """
        [schema]
        name = "verl"

        [[columns]]
        key = "actor/entropy"
        header = "H"
        width = 5
    """)
    s = detect(run.path, run.keys)
    assert s.name == "verl" and s.source.endswith("steptable.toml")
    cols = layout([run], s)
    assert [c.header for c in cols if c.key == "actor/entropy"] == ["H"]
    assert get_schema("verl", near=path).source.endswith("steptable.toml")
    assert get_schema("verl").source == "built-in"  # elsewhere, the built-in
    assert detect(run.path, run.keys, user=False).source == "built-in"


def test_local_schema_may_extend_a_config_schema(tmp_path: Path, xdg: Path) -> None:
    write(xdg / "base.toml", '[schema]\nname = "labbase"\n\n[[columns]]\nkey = "lab/acc"\n')
    write(tmp_path / "run" / "steptable.toml", '[schema]\nname = "labrun"\nextends = "labbase"\n\n'
                                               '[match]\nfiles = ["*.jsonl"]\n')
    s = detect(tmp_path / "run" / "m.jsonl", ["lab/acc"])
    assert s.name == "labrun" and [c.key for c in s.cols] == ["lab/acc"]


def test_edits_are_picked_up(tmp_path: Path) -> None:
    f = write(tmp_path / "s.toml", '[schema]\nname = "one"\n')
    assert load_schema_file(f).name == "one"
    f.write_text('[schema]\nname = "two"\ndescription = "changed"\n')
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert load_schema_file(f).name == "two"


def test_bad_config_file_is_reported_by_detect(tmp_path: Path, xdg: Path) -> None:
    write(xdg / "broken.toml", "[schema\nname = 'x'\n")
    with pytest.raises(SchemaFileError, match=r"broken\.toml:1: not valid TOML"):
        detect(tmp_path / "m.jsonl", ["step"])
    assert detect(tmp_path / "m.jsonl", ["step"], user=False).name == "generic"


@pytest.mark.parametrize("kind", ["dir", "fifo", "huge"])
def test_a_schema_file_that_cannot_be_one_is_an_error(tmp_path: Path, kind: str) -> None:
    """A directory or FIFO named steptable.toml is reported, not passed over for a parent's file (a FIFO would
    block the read); so is a file too large to be a schema."""
    f = tmp_path / "logs" / "steptable.toml"
    f.parent.mkdir()
    write(tmp_path / "steptable.toml", '[schema]\nname = "parent"\n')
    if kind == "dir":
        f.mkdir()
    elif kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(f)
    else:
        f.write_text("# " + "x" * (2 << 20) + "\n")
    with pytest.raises(SchemaFileError, match="not a regular file" if kind != "huge" else "larger than"):
        detect(f.parent / "m.jsonl", ["step"])


def test_a_schema_without_match_or_base_applies_to_runs_logging_its_keys(tmp_path: Path) -> None:
    """Every field but the name and the column keys is optional: such a file applies to the runs that log one of
    its keys (an alias too), and leaves the others to detection."""
    write(tmp_path / "logs" / "steptable.toml", """
        [schema]
        name = "mine"
        [[columns]]
        key = "my/loss"
        header = "myL"
        desc = "my loss"
        aliases = ["old/loss"]
    """)
    for arm, key in (("a", "my/loss"), ("b", "old/loss"), ("c", "other")):
        write(tmp_path / "logs" / arm / "metrics.jsonl", f'{{"step": 0, "{key}": 1}}\n')
    assert detect(tmp_path / "logs" / "a" / "metrics.jsonl", ["step", "my/loss"]).name == "mine"
    assert detect(tmp_path / "logs" / "b" / "metrics.jsonl", ["step", "old/loss"]).name == "mine"
    assert detect(tmp_path / "logs" / "c" / "metrics.jsonl", ["step", "other"]).name == "generic"
    # declaring the step (a wider step column) says nothing about which runs the file is for
    write(tmp_path / "logs2" / "steptable.toml", """
        [schema]
        name = "wide-steps"
        [[columns]]
        key = "step"
        width = 9
    """)
    write_verl(tmp_path / "logs2" / "v" / "metrics.jsonl")
    assert detect(tmp_path / "logs2" / "v" / "metrics.jsonl", ["step", "actor/pg_loss", "critic/score/mean",
                                                                "timing_s/step"]).name == "verl"
    run = next(iter(load(tmp_path / "logs" / "a" / "metrics.jsonl").values()))
    cols = layout([run], get_schema("mine", tmp_path / "logs" / "a"))
    assert [(c.key, c.header.strip(), c.desc) for c in cols] == [("step", "step", "training step"),
                                                                 ("my/loss", "myL", "my loss")]


def test_a_farther_file_that_cannot_be_used_leaves_the_nearer_one(tmp_path: Path) -> None:
    write(tmp_path / "steptable.toml", """
        [schema]
        name = "stale"
        [[columns]]
        key = "x"
        width = "wide"
    """)
    write(tmp_path / "proj" / "run1" / "steptable.toml", """
        [schema]
        name = "mine"
        [match]
        keys = ["my/loss"]
        [[columns]]
        key = "my/loss"
        header = "MYLOSS"
    """)
    path = tmp_path / "proj" / "run1" / "metrics.jsonl"
    write(path, '{"step": 1, "my/loss": 0.5}\n')
    assert detect(path, ["step", "my/loss"]).name == "mine"
    with pytest.raises(SchemaFileError, match="width"):  # the run's own nearest file still says what is wrong
        detect(tmp_path / "other.jsonl", ["step"])


def test_by_schema_keeps_arms_of_one_generic_experiment_together(tmp_path: Path) -> None:
    """Arms with the same keys (one with an extra one, one that has logged only its first key so far) share a
    layout; an unrelated CSV log beside them gets its own; the groups come in the order of their first run."""
    for arm, extra in (("a", {}), ("b", {"probe": 1.0})):
        write_rows(tmp_path / arm / "log.jsonl",
                   [{"iteration": i, "loss": 1.0 / (i + 1), "gnorm": 0.5, "tok_s": 900.0 + i, **extra}
                    for i in range(5)])
    write_rows(tmp_path / "c" / "log.jsonl", [{"iteration": 0, "loss": 2.0}])
    write_lightning(tmp_path / "d")
    fol = Follower([str(tmp_path)])
    fol.scan()
    fol.finish()
    stores = [fol.stores[k] for k in sorted(fol.stores)]
    groups = by_schema(stores)
    assert [s.name for s, _ in groups] == ["generic", "generic"]
    assert [[s.path.parent.name for s in g] for _, g in groups] == [["a", "b", "c"], ["d"]]
    ((_, one),) = by_schema(stores, groups[0][0])  # a schema named: all its runs under it
    assert len(one) == 4


@pytest.mark.usefixtures("xdg")
def test_unknown_schema_name() -> None:
    with pytest.raises(KeyError, match=r"known: .*verl"):
        get_schema("nope")


def test_a_dropped_key_declared_again_is_shown(tmp_path: Path) -> None:
    path = write_verl(tmp_path / "logs" / "run1" / "metrics.jsonl")
    write(tmp_path / "logs" / "steptable.toml", """
        [schema]
        name = "mine"
        extends = "verl"
        drop = ["actor/lr"]

        [[columns]]
        key = "actor/lr"
        header = "LR"
        fmt = ".0e"
    """)
    (run,) = load(path).values()
    cols = layout([run], detect(run.path, run.keys))
    assert [c.header for c in cols if c.key == "actor/lr"] == ["LR"]


def test_unused_files_for_a_viewer_that_says_problems_itself(tmp_path: Path) -> None:
    from steptable.schemafiles.resolve import unused_files

    plain_run(tmp_path / "r")
    write(tmp_path / "steptable.toml", '[schema]\nname = "quiet"\n[[rules]]\npattern = "actor/*"\ndesc = "d"\n')
    stores = list(load(tmp_path).values())
    (err,) = unused_files(stores)
    assert (err.path, err.line) == (str(tmp_path / "steptable.toml"), 2) and "no [match]" in str(err)
    assert [g for _, g in by_schema(stores)] == [stores]  # (a warning to say: the runs are still laid out)


def test_a_file_is_built_once_for_all_its_runs_and_again_when_it_changes(
    tmp_path: Path, xdg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every detection built the file again (600 builds for 200 runs, 5 s of a summary with 300 columns)."""
    builds: list[str] = []
    real = Schema

    def counting(name: str, *args: Any, **kwargs: Any) -> Schema:
        builds.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(user_module, "Schema", counting)
    write(xdg / "base.toml", '[schema]\nname = "labbase"\n[[columns]]\nkey = "lab/acc"\n')
    f = write(tmp_path / "logs" / "steptable.toml", '[schema]\nname = "lab"\nextends = "labbase"\n[match]\n'
                                                    'keys = ["lab/*"]\n[[columns]]\nkey = "lab/loss"\n')
    paths = [plain_run(tmp_path / "logs" / f"r{i}", **{"lab/acc": 0.5}) for i in range(5)]
    found = {id(detect(p, ["step", "lab/acc"])) for p in paths}
    assert len(found) == 1 and len(builds) == 2  # the config base and the log directory's file, once each
    before = detect(paths[0], ["step", "lab/acc"])
    f.write_text(f.read_text().replace('"lab/loss"', '"lab/kl"'))
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    after = detect(paths[0], ["step", "lab/acc"])
    assert after is not before and after.col("lab/kl") is not None and len(builds) == 3
    # the base edited: the file extending it is built on the new one
    base = xdg / "base.toml"
    base.write_text(base.read_text().replace('"lab/acc"', '"lab/acc"\nheader = "ACC"'))
    st = base.stat()
    os.utime(base, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    col = detect(paths[0], ["step", "lab/acc"]).col("lab/acc")
    assert col is not None and col.header == "ACC" and len(builds) == 5


def test_many_columns_keep_their_declared_order_with_overrides_and_after(tmp_path: Path) -> None:
    body = "".join(f'[[columns]]\nkey = "m/k{i}"\n' for i in range(299))
    body += '[[columns]]\nkey = "m/k299"\nafter = "m/k0"\n[[columns]]\nkey = "m/new"\nafter = "m/k299"\n'
    s = load_schema_file(write(tmp_path / "many.toml", '[schema]\nname = "many"\n' + body))
    keys = [c.key for c in s.cols]
    assert keys[:4] == ["m/k0", "m/k299", "m/new", "m/k1"] and keys[-1] == "m/k298" and len(keys) == 301
    v = load_schema_file(write(tmp_path / "v.toml", '[schema]\nname = "v"\nextends = "verl"\ndrop = ["actor/lr"]\n'
                                                    '[[columns]]\nkey = "critic/kl"\nafter = "step"\n'))
    verl = get_schema("verl")
    assert [c.key for c in v.cols] == ["step", "critic/kl"] + [c.key for c in verl.cols[1:]
                                                               if c.key not in ("critic/kl", "actor/lr")]
