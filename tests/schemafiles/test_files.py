"""steptable.schemafiles.files: where schema files are found: the user's config directory (XDG or home) and
the nearest matching steptable.toml above a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.schemafiles.files import config_dir, schema_files
from steptable.schemafiles.resolve import detect, get_schema
from tests.helpers import write

pytestmark = pytest.mark.usefixtures("xdg")  # (no user's schema directory leaks in)


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


def test_home_config_without_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config_dir() == tmp_path / ".config" / "steptable" / "schemas"


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
