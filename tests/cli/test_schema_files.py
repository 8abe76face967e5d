"""steptable.toml end to end: files above a path or below it, named schemas, aliases, hide globs and rules, a file
that applies to none of its runs said once, a user's generic schema, formats without a width."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable import Col, StepLogger
from steptable.ingest import load
from steptable.schemafiles.resolve import detect, get_schema, load_schema_file
from steptable.schemas import SCHEMAS, layout
from tests.helpers import plain_run, run_cli, write, write_rows
from tests.trainer_logs import write_verl

pytestmark = pytest.mark.usefixtures("xdg")  # (no user's schema directory leaks in)


def test_a_file_above_a_relative_path_and_a_named_schema_near_any_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cd logs/run1; steptable tail .`: logs/steptable.toml, above the path given, applies only when named with
    --schema-file; `--schema NAME` is found near any path given, not only the first, and `legend --schema NAME`
    without a path finds it in the working directory's steptable.toml."""

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
    """key = "reward", aliases = ["rew_score"], header = "R": summary's row is R, as tail's column is, and
    `summary --columns R` matches it."""
    from tests.helpers import write_rows

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


def header_of(out: str) -> list[str]:
    return out.splitlines()[0].split()


HIDE_DROP = """
    [schema]
    name = "mine"
    extends = "verl"
    drop = ["actor/lr"]
    hide = ["timing_s/*"]
"""


def test_hide_globs_reach_declared_columns_and_a_dropped_key_stays_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verl declares t_step and t_gen: a user's hide glob over timing_s/* left them in the table, and the dropped
    actor/lr came back as an automatic column "actor/lr (as logged)"."""
    path = write_verl(tmp_path / "logs" / "run1" / "metrics.jsonl")
    write(tmp_path / "logs" / "steptable.toml", HIDE_DROP)
    (run,) = load(path).values()
    schema = detect(run.path, run.keys)
    assert schema.name == "mine"
    keys = [c.key for c in layout([run], schema)]
    assert not [k for k in keys if k.startswith("timing_s/") or k == "actor/lr"], keys
    assert "actor/pg_loss" in keys
    # a column filter still reaches them: the declared ones as declared
    picked = {c.key: c for c in layout([run], schema, patterns=["timing_s/*", "actor/lr"])}
    assert picked["timing_s/step"].header == "t_step" and picked["timing_s/gen"].header == "t_gen"
    assert "actor/lr" in picked
    rc, out, _ = run_cli(["tail", str(tmp_path / "logs"), "-n", "1", "--width", "0"], capsys)
    assert rc == 0 and not {"t_step", "t_gen", "lr", "actor/lr"} & set(header_of(out)), out
    rc, out, _ = run_cli(["tail", str(tmp_path / "logs"), "-n", "1", "--columns", "t_step,t_gen"], capsys)
    assert rc == 0 and header_of(out) == ["step", "t_step", "t_gen"], out
    rc, out, _ = run_cli(["legend", str(tmp_path / "logs")], capsys)
    assert rc == 0 and "(as logged)" not in out
    assert any(line.split()[:1] == ["actor/lr"] and "learning rate" in line for line in out.splitlines()), out


def test_a_header_step_gives_one_step_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_rows(tmp_path / "logs" / "r" / "metrics.jsonl", [{"step": s, "actor/loss": 1 / (s + 1)} for s in range(4)])
    write(tmp_path / "logs" / "steptable.toml", '[schema]\nname = "x"\n[[columns]]\nkey = "actor/loss"\n'
                                                'header = "step"\n')
    rc, out, err = run_cli(["tail", str(tmp_path / "logs"), "-n", "1"], capsys)
    assert rc == 2 and out == "" and "steptable.toml:5:" in err and "step column" in err


@pytest.mark.parametrize("cmd", ["tail", "summary", "legend"])
def test_a_file_that_applies_to_none_of_its_runs_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str], cmd: str
                                                         ) -> None:
    """Only hide globs (no column, no [match], no base) or a misspelt key: the file is not passed over in
    silence. Said once as a warning: the runs are still shown (the file may be meant for runs that have not
    logged its keys yet)."""
    plain_run(tmp_path / "a" / "r")
    write(tmp_path / "a" / "steptable.toml", '[schema]\nname = "quiet"\nhide = ["actor/*"]\n')
    rc, out, err = run_cli([cmd, str(tmp_path / "a")], capsys)
    assert rc == 0 and out != "", out
    assert err.count("\n") == 1 and "a/steptable.toml:2: applies to none of the 1 run(s)" in err, err
    assert "(the file is not used)" in err
    plain_run(tmp_path / "b" / "r")
    write(tmp_path / "b" / "steptable.toml", '[schema]\nname = "typo"\n\n[[columns]]\nkey = "actor/los"\n'
                                             'header = "L"\n')
    rc, out, err = run_cli([cmd, str(tmp_path / "b")], capsys)
    assert rc == 0 and "b/steptable.toml:5: applies to none" in err and "'actor/loss'" in err, err


def test_a_file_that_applies_to_some_or_says_which_runs_is_not_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                                     ) -> None:
    # one of two runs logs its key
    plain_run(tmp_path / "a" / "r1", **{"my/acc": 0.5})
    plain_run(tmp_path / "a" / "r2")
    write(tmp_path / "a" / "steptable.toml", '[schema]\nname = "mine"\n[[columns]]\nkey = "my/acc"\nheader = "ACC"\n')
    rc, out, _ = run_cli(["tail", str(tmp_path / "a"), "-n", "1"], capsys)
    assert rc == 0 and "ACC" in out
    # [match] or a base says which runs it is for: matching none of these is its choice
    for name, text in (("m", '[schema]\nname = "m"\n[match]\nfiles = ["other*.jsonl"]\n[[columns]]\nkey = "x"\n'),
                       ("v", '[schema]\nname = "v"\nextends = "verl"\nhide = ["timing_s/*"]\n')):
        plain_run(tmp_path / name / "r")
        write(tmp_path / name / "steptable.toml", text)
        rc, _, err = run_cli(["tail", str(tmp_path / name), "-n", "1"], capsys)
        assert rc == 0 and err == "", err
    # a farther file is not the nearest file of runs that have their own
    plain_run(tmp_path / "f" / "exp" / "r")
    write(tmp_path / "f" / "steptable.toml", '[schema]\nname = "far"\n[[columns]]\nkey = "nope"\n')
    write(tmp_path / "f" / "exp" / "steptable.toml", '[schema]\nname = "near"\n[[columns]]\nkey = "actor/loss"\n'
                                                     'header = "L"\n')
    rc, out, err = run_cli(["tail", str(tmp_path / "f" / "exp"), "-n", "1"], capsys)
    assert rc == 0 and "L" in header_of(out), err


def test_a_file_beside_steplogger_runs_is_for_schema_and_not_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                                   ) -> None:
    """A StepLogger's run keeps the columns it printed with; a file beside it is used by --schema NAME."""
    cols = [Col("step", 5, "step", "d"), Col("rew", 6, "rew", ".3f")]
    with StepLogger(cols, run_dir=tmp_path / "logs" / "armA", arm="armA", console=False, alerts=False) as sl:
        for s in range(3):
            sl.log({"step": s, "rew": s / 3})
    from steptable.schemafiles.resolve import unused_files

    write(tmp_path / "logs" / "steptable.toml", '[schema]\nname = "mine"\n[[columns]]\nkey = "rew"\nheader = "R"\n')
    stores = list(load(tmp_path / "logs").values())
    assert unused_files(stores) == []
    rc, out, err = run_cli(["tail", str(tmp_path / "logs"), "-n", "1"], capsys)
    assert rc == 0 and "rew" in header_of(out), err
    rc, out, _ = run_cli(["tail", str(tmp_path / "logs"), "-n", "1", "--schema", "mine"], capsys)
    assert rc == 0 and "R" in header_of(out)


def test_a_users_generic_is_the_fallback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A user schema named "generic" is the fallback, not the built-in (whose match scores nothing)."""
    write_rows(tmp_path / "logs" / "r" / "metrics.jsonl", [{"step": s, "foo": s / 10, "bar": 1 / (s + 1)}
                                                           for s in range(4)])
    verl = write_verl(tmp_path / "logs" / "v" / "metrics.jsonl")
    write(tmp_path / "logs" / "steptable.toml", """
        [schema]
        name = "generic"
        [[columns]]
        key = "foo"
        header = "FOO"
        fmt = ".2f"
    """)
    s = detect(tmp_path / "logs" / "r" / "metrics.jsonl", ["step", "foo", "bar"])
    assert s.name == "generic" and s.source.endswith("steptable.toml")
    assert detect(verl, ["step", "actor/pg_loss", "critic/score/mean", "timing_s/step"]).name == "verl"
    assert detect(tmp_path / "elsewhere.jsonl", ["step", "foo"]).source == "built-in"
    rc, out, _ = run_cli(["tail", str(tmp_path / "logs" / "r"), "-n", "1"], capsys)  # (above the path given)
    assert rc == 0 and header_of(out)[:2] == ["step", "foo"], out
    rc, out, _ = run_cli(["tail", str(tmp_path / "logs" / "r"), "-n", "1",
                          "--schema-file", str(tmp_path / "logs" / "steptable.toml")], capsys)
    assert rc == 0 and header_of(out)[:2] == ["step", "FOO"], out


def test_a_fmt_without_a_width_gets_room_for_its_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """fmt = ".6f" got the header's width (6) and every value its compact form (.0345)."""
    write_rows(tmp_path / "logs" / "r" / "metrics.jsonl", [{"step": s, "actor/loss": 1 / (s + 1)} for s in range(30)])
    write(tmp_path / "logs" / "steptable.toml", """
        [schema]
        name = "mine"
        [[columns]]
        key = "actor/loss"
        header = "loss"
        fmt = ".6f"
        [[columns]]
        key = "my/pct"
        fmt = ".1%"
        [[columns]]
        key = "my/w"
        fmt = ".2f"
        width = 5
    """)
    s = get_schema("mine", near=tmp_path / "logs")
    assert [(c.key, c.width) for c in s.cols] == [("actor/loss", 8), ("my/pct", 6), ("my/w", 5)]
    rc, out, _ = run_cli(["tail", str(tmp_path / "logs"), "-n", "1"], capsys)
    assert rc == 0 and out.splitlines()[1].split() == ["29", "0.033333"], out
    v = load_schema_file(write(tmp_path / "v.toml", '[schema]\nname = "v"\nextends = "verl"\n[[columns]]\n'
                                                    'key = "actor/pg_loss"\nfmt = "+.6f"\n'))
    col = v.col("actor/pg_loss")
    assert col is not None and col.width == 9


def test_a_hide_glob_spares_the_columns_the_file_declares_itself(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """hide = ["timing_s/*"] with the file's own [[columns]] timing_s/gen: "hide the group, keep the one I declared"
    lost the declared column too."""
    write_verl(tmp_path / "logs" / "run" / "grpo.jsonl")
    write(tmp_path / "logs" / "steptable.toml", """
        [schema]
        name = "mine"
        extends = "verl"
        hide = ["timing_s/*"]

        [[columns]]
        key = "timing_s/gen"
        header = "gen_s"
    """)
    rc, out, _ = run_cli(["tail", str(tmp_path / "logs"), "--width", "0", "-n", "1"], capsys)
    head = header_of(out)
    assert rc == 0 and "gen_s" in head and "t_step" not in head, head
    plain = tmp_path / "plain"  # extending verl without a hide keeps verl's own timing columns
    write_verl(plain / "run" / "grpo.jsonl")
    write(plain / "steptable.toml", '[schema]\nname = "mine2"\nextends = "verl"\n')
    rc, out, _ = run_cli(["tail", str(plain), "--width", "0", "-n", "1"], capsys)
    assert rc == 0 and {"t_step", "t_gen"} <= set(header_of(out))


def test_hiding_reaches_through_a_rule_and_a_schema_that_extends_another(tmp_path: Path, xdg: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """[[rules]] hide = true over verl's timings, and a schema extending a user schema that hides them: both keep
    the timing columns hidden."""
    write_verl(tmp_path / "a" / "run" / "grpo.jsonl")
    write(tmp_path / "a" / "steptable.toml", """
        [schema]
        name = "ruled"
        extends = "verl"

        [[rules]]
        pattern = "timing_s/*"
        hide = true
    """)
    rc, out, _ = run_cli(["tail", str(tmp_path / "a"), "--width", "0", "-n", "1"], capsys)
    assert rc == 0 and not {"t_step", "t_gen"} & set(header_of(out)), header_of(out)
    write(xdg / "base.toml", '[schema]\nname = "labbase"\nextends = "verl"\nhide = ["timing_s/*"]\n')
    write_verl(tmp_path / "b" / "run" / "grpo.jsonl")
    write(tmp_path / "b" / "steptable.toml", '[schema]\nname = "lab"\nextends = "labbase"\n')
    rc, out, _ = run_cli(["tail", str(tmp_path / "b"), "--width", "0", "-n", "1"], capsys)
    assert rc == 0 and not {"t_step", "t_gen"} & set(header_of(out)), header_of(out)


BELOW = """
    [schema]
    name = "mine"
    [[columns]]
    key = "a"
    header = "AAA"
"""


def test_a_schema_named_in_a_file_below_the_path_is_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # detection finds logs/exp1/steptable.toml beside its runs; --schema mine from logs/ must find it as well
    write(tmp_path / "logs" / "exp1" / "steptable.toml", BELOW)
    write_rows(tmp_path / "logs" / "exp1" / "metrics.jsonl", [{"step": i, "a": i / 2, "b": 1} for i in range(3)])
    logs = str(tmp_path / "logs")
    rc, out, err = run_cli(["tail", logs, "--schema", "mine"], capsys)
    assert rc == 0 and header_of(out)[:2] == ["step", "AAA"], (out, err)
    rc, out, err = run_cli(["legend", logs, "--schema", "mine"], capsys)
    assert rc == 0 and out.startswith("mine columns (schema file ") and "AAA" in out, (out, err)
    assert get_schema("mine", near=[logs]).name == "mine"
    # an unknown name still fails, and the names offered include the file's
    rc, out, err = run_cli(["tail", logs, "--schema", "nope"], capsys)
    assert rc == 2 and "'nope'" in err and "mine" in err, err
    # a built-in name nothing below overrides is the built-in
    assert get_schema("verl", near=[logs]) is SCHEMAS["verl"]


def test_a_built_in_overridden_below_the_path_is_the_override(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Detection applies logs/exp1/steptable.toml's own ``verl`` to the runs beside it, and so does ``--schema
    verl`` from logs/ (not the built-in): the same run reads one way."""
    write(tmp_path / "logs" / "exp1" / "steptable.toml", BELOW.replace('"mine"', '"verl"'))
    write_rows(tmp_path / "logs" / "exp1" / "metrics.jsonl", [{"step": i, "a": i / 2, "b": 1} for i in range(3)])
    logs = str(tmp_path / "logs")
    assert get_schema("verl", near=[logs]) is not SCHEMAS["verl"]
    rc, out, err = run_cli(["tail", logs, "--schema", "verl"], capsys)
    assert rc == 0 and header_of(out)[:2] == ["step", "AAA"], (out, err)


@pytest.mark.parametrize("where", ["beside", "below"])
def test_follow_columns_prints_a_user_column_logged_under_an_alias_that_arrives_late(tmp_path: Path,
                                                                                     where: str) -> None:
    """`tail -f --columns R`, R a steptable.toml column read under an alias the first rows lack: the rows that
    bring the alias print its values (the stores keep what a user's column reads, as a built-in's)."""
    import json

    from tests.cli.helpers import Live

    run = tmp_path / "exp" / "run"
    run.mkdir(parents=True)
    write((tmp_path if where == "beside" else run) / "steptable.toml", """
        [schema]
        name = "mine"

        [match]
        keys = ["loss"]

        [[columns]]
        key = "reward"
        aliases = ["rew_score"]
        header = "R"
        width = 5
    """)
    path = run / "metrics.jsonl"

    def add(steps: range) -> None:
        with open(path, "a") as fh:
            for s in steps:
                row = {"step": s, "loss": 1.0 / (s + 1), **({"rew_score": s + 0.5} if s >= 3 else {})}
                fh.write(json.dumps(row) + "\n")

    add(range(3))
    live = Live(tmp_path, ["--columns", "R"])
    live.step()
    add(range(3, 6))
    live.step()
    add(range(6, 8))
    live.step()
    rows = [line.split() for line in live.out.getvalue().splitlines()]
    assert [r for r in rows if len(r) == 2 and r[0].isdigit()] == [[str(s), f"{s + 0.5}"] for s in range(3, 8)]


def test_columns_with_a_broken_file_below_the_path_read_as_without(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A steptable.toml under the path that is not valid TOML: `tail --columns` says what is wrong as `tail` does
    (the keys kept for its columns are not guessed from it)."""
    for run in ("bad", "ok"):
        write_rows(tmp_path / run / "metrics.jsonl", [{"step": s, "loss": 1.0 / (s + 1)} for s in range(3)])
    (tmp_path / "bad" / "steptable.toml").write_text("[schema\nname=\n")
    got = run_cli(["tail", str(tmp_path), "--columns", "loss,step"], capsys)
    want = run_cli(["tail", str(tmp_path)], capsys)
    assert got == want and got[0] == 2 and "not valid TOML" in got[2]

