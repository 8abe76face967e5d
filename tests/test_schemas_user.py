"""User schemas: TOML files that extend or override built-ins, where they are found, and their errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from steptable.ingest import load
from steptable.schemafiles.files import config_dir, schema_files
from steptable.schemafiles.resolve import detect, get_schema, load_schema_file
from steptable.schemas import SchemaFileError, layout
from tests.helpers import write
from tests.trainer_logs import write_verl

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


def test_config_dir_schema_matches_by_keys(tmp_path: Path, xdg: Path) -> None:
    write(xdg / "lab.toml", """
        [schema]
        name = "lab"
        extend = false

        [match]
        keys = ["lab/*"]

        [[columns]]
        key = "lab/acc"
        better = "higher"
    """)
    assert config_dir() == xdg
    assert schema_files() == [xdg / "lab.toml"]
    s = detect(tmp_path / "x.jsonl", ["step", "lab/acc", "other"])
    assert s.name == "lab"
    col = s.col("lab/acc")
    assert col is not None and col.header == "acc" and col.width == 6 and col.better == "higher"
    assert detect(tmp_path / "x.jsonl", ["step", "other"]).name == "generic"
    assert get_schema("lab").name == "lab"


def test_local_schema_may_extend_a_config_schema(tmp_path: Path, xdg: Path) -> None:
    write(xdg / "base.toml", '[schema]\nname = "labbase"\n\n[[columns]]\nkey = "lab/acc"\n')
    write(tmp_path / "run" / "steptable.toml", '[schema]\nname = "labrun"\nextends = "labbase"\n\n'
                                               '[match]\nfiles = ["*.jsonl"]\n')
    s = detect(tmp_path / "run" / "m.jsonl", ["lab/acc"])
    assert s.name == "labrun" and [c.key for c in s.cols] == ["lab/acc"]


def test_home_config_without_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_dir() == tmp_path / ".config" / "steptable" / "schemas"


def test_edits_are_picked_up(tmp_path: Path) -> None:
    f = write(tmp_path / "s.toml", '[schema]\nname = "one"\n')
    assert load_schema_file(f).name == "one"
    f.write_text('[schema]\nname = "two"\ndescription = "changed"\n')
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert load_schema_file(f).name == "two"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('[schema]\nname = "x"\n[[columns]]\nkey = "a"\nwidth = = 3\n', 5, "not valid TOML"),
        ('[schema]\nname = "x"\n\n[[columns]]\nkey = "a"\n\n[[columns]]\nkey = "b"\nwidht = 3\n', 9,
         "unknown field 'widht'"),
        ('[schema]\nname = "x"\n[[columns]]\nkey = "a"\nwidth = "7"\n', 5, "width must be int"),
        ('[schema]\nname = "x"\n[[columns]]\nkey = "a"\nwidth = 0\n', 5, "width must be an int from 1 to 1000"),
        ('[schema]\nname = "x"\n[[columns]]\nkey = "a"\nwidth = 3\nheader = "longer"\n', 6, "wider than its width"),
        ('[schema]\nname = "x"\n[[columns]]\nkey = "a"\nfmt = ".2q"\n', 5, "bad format spec"),
        ('[schema]\nname = "x"\n[[columns]]\nkey = "a"\nbetter = "up"\n', 5, "better must be"),
        ('[schema]\nname = "x"\nextends = "nope"\n', 3, "extends unknown schema 'nope'"),
        ('[schema]\nname = "x"\n[[columns]]\nkey = "a"\nheader = "h"\n[[columns]]\nkey = "b"\nheader = "h"\n', 8,
         "share the header 'h'"),
        ('[schema]\nname = "x"\nextends = "verl"\n[[columns]]\nkey = "m"\nheader = "score"\n', 6, "share the header"),
        ('[schema]\nname = "x"\n[colums]\nkey = "a"\n', 3, "unknown table 'colums'"),
        ('[schema]\ndescription = "no name"\n', 1, "needs a name"),
        ('[schema]\nname = "x"\n[[columns]]\nwidth = 4\n', 3, "needs a key"),
        ('[schema]\nname = "x"\nextends = "verl"\ndrop = ["nope"]\n', 4, "drop: 'nope'"),
        ('[schema]\nname = "x"\n[[columns]]\nkey = "a"\nafter = "zzz"\n', 5, "after 'zzz'"),
        ('[schema]\nname = "x"\n[match]\nkeys = "my/loss"\n', 4, "keys must be list"),
        ('[schema]\nname = "x"\n[[rules]]\ndesc = "d"\n', 3, "needs a pattern"),
        ('[schema]\nname = "x"\ncolumns = 3\n', 3, "unknown field 'columns'"),
        ('columns = [{ key = "a", width = -1 }]\n[schema]\nname = "x"\n', 1, "width must be an int from 1 to 1000"),
        # a spec or a width that would only cost memory (a gigabyte string per cell, a hang at the first row)
        ('[schema]\nname = "x"\n[[columns]]\nkey = "a"\nfmt = ">99999999999"\n', 5, "over 200"),
        ('[schema]\nname = "x"\n[[columns]]\nkey = "a"\nfmt = ".1000000000f"\n', 5, "over 200"),
        ('[schema]\nname = "x"\n[[columns]]\nkey = "step"\nwidth = 1000000000000\n', 5, "from 1 to 1000"),
        # a rule's spec is checked when the file loads, not when a key first matches it
        ('[schema]\nname = "x"\n[[rules]]\npattern = "elapsed*"\nfmt = ".3q"\n', 5, "bad format spec"),
        ('[schema]\nname = "x"\n[match]\nfiles = [""]\n', 4, "empty pattern"),
        ('[schema]\nname = "evil\\u001b]0;PWNED\\u0007"\n', 2, "control characters"),
        # the field named in the message is the one at fault, whatever the key's own name says
        ('[schema]\nname = "x"\n[[columns]]\nkey = "x/header"\nheader = "hx"\ndesc = "d"\nwidth = -1\n', 7,
         "width must be"),
    ],
)
def test_errors_name_file_and_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    f = write(tmp_path / "bad.toml", text)
    with pytest.raises(SchemaFileError) as info:
        load_schema_file(f)
    err = info.value
    assert (err.path, err.line) == (str(f), line), str(err)
    assert str(err).startswith(f"{f}:{line}: ")
    assert words in str(err)


def test_bad_config_file_is_reported_by_detect(tmp_path: Path, xdg: Path) -> None:
    write(xdg / "broken.toml", "[schema\nname = 'x'\n")
    with pytest.raises(SchemaFileError, match=r"broken\.toml:1: not valid TOML"):
        detect(tmp_path / "m.jsonl", ["step"])
    assert detect(tmp_path / "m.jsonl", ["step"], user=False).name == "generic"


@pytest.mark.parametrize("kind", ["dir", "fifo", "huge"])
def test_a_schema_file_that_cannot_be_one_is_an_error(tmp_path: Path, kind: str) -> None:
    """A directory or FIFO named steptable.toml is reported (it was passed over, and a parent's file used
    instead; a FIFO would block the read); so is a file too large to be a schema."""
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


def test_a_nearer_file_that_does_not_match_leaves_a_farther_one_that_does(tmp_path: Path) -> None:
    write(tmp_path / "logs" / "steptable.toml", """
        [schema]
        name = "sweep"
        [match]
        keys = ["other/acc"]
        [[columns]]
        key = "other/acc"
        header = "ACC"
        fmt = ".4f"
    """)
    write(tmp_path / "logs" / "exp" / "steptable.toml", """
        [schema]
        name = "exp"
        [match]
        files = ["nomatch*.jsonl"]
        [[columns]]
        key = "my/loss"
    """)
    path = tmp_path / "logs" / "exp" / "run" / "metrics.jsonl"
    write(path, '{"step": 1, "other/acc": 0.5}\n')
    assert detect(path, ["step", "other/acc"]).name == "sweep"
    assert [f.parent.name for f in schema_files(path)] == ["exp", "logs"]


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


def test_a_file_above_a_relative_path_and_a_named_schema_near_any_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cd logs/run1; steptable tail .` ignored logs/steptable.toml ("." has no parents); `--schema NAME` was looked
    for beside the first path only, and `legend --schema NAME` without a path nowhere but the user's directory."""
    from tests.helpers import run_cli

    write_verl(tmp_path / "a" / "logs" / "run1" / "grpo.jsonl")
    write_verl(tmp_path / "other" / "grpo.jsonl")
    write(tmp_path / "a" / "logs" / "steptable.toml", """
        [schema]
        name = "mine"
        extends = "verl"

        [[columns]]
        key = "actor/entropy"
        header = "ENT"
        width = 6
    """)
    monkeypatch.chdir(tmp_path / "a" / "logs" / "run1")
    rc, out, _ = run_cli(["tail", ".", "-n", "2"], capsys)  # a file above the path given is not the user's
    assert rc == 0 and "ENT" not in out
    rc, out, _ = run_cli(["tail", ".", "-n", "2", "--schema-file", "../steptable.toml"], capsys)
    assert rc == 0 and "ENT" in out.splitlines()[0]
    rc, out, _ = run_cli(["tail", ".", "--schema-file", "../steptable.toml", "--schema", "mine", "-n", "2"], capsys)
    assert rc == 0 and "ENT" in out
    monkeypatch.chdir(tmp_path / "a" / "logs")
    rc, out, _ = run_cli(["legend", "--schema", "mine"], capsys)
    assert rc == 0 and "ENT" in out
    monkeypatch.chdir(tmp_path)
    rc, out, err = run_cli(["tail", "other", "a/logs", "--schema", "mine", "-n", "1"], capsys)
    assert rc == 0 and "ENT" in out, err


def test_summary_names_a_column_logged_under_an_alias_by_its_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """key = "reward", aliases = ["rew_score"], header = "R": tail said R, summary's row said rew_score, and
    `summary --columns R` matched nothing."""
    from tests.helpers import run_cli, write_rows

    write_rows(tmp_path / "run" / "metrics.jsonl", [{"step": s, "rew_score": 0.1 * s, "loss": 1.0 / (s + 1)}
                                                    for s in range(6)])
    write(tmp_path / "steptable.toml", """
        [schema]
        name = "mine"

        [match]
        keys = ["rew_score"]

        [[columns]]
        key = "reward"
        aliases = ["rew_score"]
        header = "R"
        width = 5
    """)
    rc, out, _ = run_cli(["summary", str(tmp_path)], capsys)
    assert rc == 0 and any(line.startswith("R ") for line in out.splitlines()), out
    rc, out, err = run_cli(["summary", str(tmp_path), "--columns", "R"], capsys)
    assert rc == 0 and "matches no column" not in err and any(line.startswith("R ") for line in out.splitlines())
