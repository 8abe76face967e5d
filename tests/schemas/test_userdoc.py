"""steptable.schemas.userdoc: a schema file's problems name the file and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptable.schemafiles.resolve import load_schema_file
from steptable.schemas import SchemaFileError
from tests.helpers import write

pytestmark = pytest.mark.usefixtures("xdg")  # (no user's schema directory leaks in)


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
