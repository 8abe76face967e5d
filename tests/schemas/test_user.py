"""steptable.schemas.user: schemas built from user files: reserved and blank headers are errors, a step key may
be headed step, a huge format width is refused before formatting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from steptable.schemafiles.resolve import load_schema_file
from steptable.schemas import SchemaFileError
from steptable.schemas import user as user_module
from tests.helpers import write

pytestmark = pytest.mark.usefixtures("xdg")  # (no user's schema directory leaks in)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        # the step column layout adds is headed "step": a second "step" column, and summary's "step" row another metric
        ('[schema]\nname = "x"\n[[columns]]\nkey = "actor/loss"\nheader = "step"\n', 5, "header 'step' is the step"),
        ('[schema]\nname = "x"\n[[columns]]\nkey = "a"\n[[columns]]\nkey = "b"\nheader = " step "\n', 7, "'step'"),
        # StepLogger's own schemas: by_schema groups runs by name
        ('[schema]\nname = "steplogger"\n', 2, "StepLogger"),
        ('[schema]\nname = "steplogger-3"\n\n[[columns]]\nkey = "a"\n', 2, "StepLogger"),
        # a blank header: a column without a name
        ('[schema]\nname = "x"\n[[columns]]\nkey = "actor/loss"\nheader = ""\n', 5, "header is empty"),
        ('[schema]\nname = "x"\n[[columns]]\nkey = "a"\n\n[[columns]]\nkey = "b"\nheader = "   "\n', 8, "empty"),
        ('[schema]\nname = "x"\nextends = "verl"\n[[columns]]\nkey = "actor/pg_loss"\nheader = ""\n', 6, "empty"),
    ],
)
def test_reserved_headers_and_names_and_blank_headers_are_errors(tmp_path: Path, text: str, line: int, words: str
                                                                 ) -> None:
    f = write(tmp_path / "bad.toml", text)
    with pytest.raises(SchemaFileError) as info:
        load_schema_file(f)
    assert (info.value.path, info.value.line) == (str(f), line), str(info.value)
    assert words in str(info.value)


def test_a_step_key_may_be_headed_step_and_other_names_are_free(tmp_path: Path) -> None:
    s = load_schema_file(write(tmp_path / "ok.toml", """
        [schema]
        name = "steploggers"
        [[columns]]
        key = "iteration"
        header = "step"
        [[columns]]
        key = "my/step"
    """))
    assert [c.header for c in s.cols] == ["step", "my/step"]


def test_a_huge_format_width_is_refused_before_it_is_formatted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    """fmt = ">500000000.2f" is refused by the spec check before anything is formatted with it (sizing the column
    would format half a gigabyte)."""
    formatted: list[Any] = []
    monkeypatch.setattr(user_module, "format_value", lambda *a, **kw: formatted.append(a) or "x")
    f = write(tmp_path / "s.toml", '[schema]\nname = "x"\n\n[[columns]]\nkey = "a"\nfmt = ">500000000.2f"\n')
    with pytest.raises(SchemaFileError, match="a width or precision over"):
        load_schema_file(f)
    assert formatted == []
