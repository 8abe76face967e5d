"""Automatic columns: the column set a StepLogger made without one prints with, chosen from its first row.

The first row's keys pick the schema the readers would pick for the file (``schemafiles.resolve.detect``: the trl
schema for HF/TRL keys, tinker's, verl's..., a ``steptable.toml`` beside the run; generic otherwise), and
``steptable.schemas.layout`` lays the row out as ``steptable tail`` lays the file out: the step, the schema's
declared columns present, then the other keys ranked by how much they tell. In a terminal, as many as fit its width
as the console prints them (``steptable.logger.consolecols``: abbreviated headers, each column as wide as its
value), also where stdout is a pipe with a terminal beside it (``| tee log``); in a pipe read by no one's terminal
(an agent's, CI's) or a file, those ``tail`` shows in 200 cells (full headers), so that an agent reads one column set
either way. A column that widens past the line (:attr:`AutoColumns.room`) leaves out the columns that no longer fit.
``expect`` names keys later rows carry (an evaluation's) so that they have columns from the start. A key first
logged later (SB3's losses from PPO's first update on, Lightning's validation at the end of an epoch) lays the row
out again with it (:class:`AutoColumns`): the printed row shows it from then on, under a header printed again.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from steptable.ingest.keycut import past_room
from steptable.ingest.table import MAX_KEYS
from steptable.logger.consolecols import ConsoleLayout
from steptable.logger.sinks import report_once
from steptable.logger.writer import error_text
from steptable.schemafiles.resolve import detect, get_schema, user_schemas
from steptable.schemas import registry
from steptable.schemas.arrange import layout
from steptable.schemas.base import Schema
from steptable.schemas.userdoc import SchemaFileError
from steptable.table.columns import Col
from steptable.table.formatting import sanitize
from steptable.table.rowvalues import flat

#: cells of a printed row when stdout is not a terminal (as ``steptable tail``)
PIPE_WIDTH = 200
#: cells the console's level icon and the space after it take before a row (``setup_logging``'s format)
ICON_CELLS = 2
#: the step column's least width: a run passing step 99999 must not push its row out of line before then
STEP_WIDTH = 5


class _OneRow:
    """One row as a schema's ``RunView``: each key's column holds its value (None for an expected key)."""

    def __init__(self, row: Mapping[str, Any], expect: Iterable[str]) -> None:
        self._row = {**{k: None for k in expect}, **row}
        self.keys = list(self._row)

    def column(self, key: str) -> Sequence[Any]:
        return [self._row.get(key)]

    def __len__(self) -> int:
        return 1


def terminal_width() -> int | None:
    """The width of the terminal the printed rows reach (``COLUMNS`` where set), else None (a file; a pipe with no
    terminal beside it: an agent's, CI's).

    stdout's terminal; where stdout is a pipe and stderr or stdin is a terminal, that terminal's: ``python train.py
    | tee log`` (or ``2>&1 | tee``) is read by a person through the pipe, and 200-cell rows wrap there. A stdout
    redirected to a file keeps the pipe's width whatever the other two are.
    """
    width = shutil.get_terminal_size((0, 0)).columns
    if width or not _stdout_is_pipe():
        return width or None
    for stream in (sys.__stderr__, sys.__stdin__):
        try:
            return os.get_terminal_size(stream.fileno()).columns or None  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            continue
    return None


def _stdout_is_pipe() -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(sys.__stdout__.fileno()).st_mode)  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return False


def row_width() -> int:
    """Cells a printed line may take: the terminal's width, else PIPE_WIDTH (``COLUMNS`` overrides both)."""
    return terminal_width() or PIPE_WIDTH


def room(line: int) -> int:
    """Cells a row may take after its level icon on a line of ``line`` cells."""
    return max(line - ICON_CELLS, 1)


#: where user schemas are looked for, in the order a failed look-up falls back: beside the run and the user's own
#: (``steptable.toml`` files in the run's directory and above it), the user's own alone, none (the built-ins)
PLACES = ("run", "user", "none")
_WITHOUT = {"run": "the steptable.toml files beside the run could not be read",
            "user": "the user's schema files could not be read"}
_NOW = {"user": "the user's own and the built-in schemas", "none": "the built-in schemas"}


def find_schema(path: str | os.PathLike[str], keys: Sequence[str], schema: str | None = None,
                place: str = "run") -> Schema:
    """The schema a run at ``path`` with ``keys`` is laid out with: ``schema`` by name, else the one detected; the
    user schemas of ``place`` (one of :data:`PLACES`) apply. Raises what the look-up raises (OSError: a relative
    ``path`` where the working directory is gone; SchemaFileError: a file that cannot be used; KeyError: an unknown
    ``schema``)."""
    p = Path(path)
    if place == "run":
        return get_schema(schema, p.parent) if schema is not None else detect(p, keys)
    if place == "user":
        return get_schema(schema) if schema is not None else registry.detect(p, keys, user_schemas())
    return registry.SCHEMAS[schema] if schema is not None else registry.detect(p, keys)


def auto_columns(row: Mapping[str, Any], path: str | os.PathLike[str] = "metrics.jsonl", **options: Any
                 ) -> tuple[Col, ...]:
    """:func:`auto_layout`'s columns (``options``: its keyword arguments)."""
    return auto_layout(row, path, **options)[0]


def auto_layout(
    row: Mapping[str, Any],
    path: str | os.PathLike[str] = "metrics.jsonl",
    *,
    expect: Sequence[str] = (),
    schema: str | None = None,
    max_width: int | None = None,
    terminal: int | None = None,
    chosen: Schema | None = None,
) -> tuple[tuple[Col, ...], list[Col]]:
    """The columns for a run whose first row is ``row`` (flat: ``{"train/loss": ...}``), and the columns of the
    keys of ``row`` that the layout would show but the width leaves out (for the line that names them, and
    table.txt, which holds every column).

    path       where the rows go: user schemas (``steptable.toml``) beside it apply, and its name counts in detection
    expect     keys not in this row that later rows will carry (evaluation metrics): given columns now
    schema     a schema name to lay out with instead of detecting one
    max_width  cells the row may take (default :func:`row_width`), counted as ``tail`` prints it
    terminal   the width of a terminal the rows are printed in: the columns kept are those a ``ConsoleLayout`` prints
               of this row within it, after the level icon (abbreviated headers, each column as wide as its value);
               ``max_width`` is then not used; the candidates are the first ``room // 2 + 1`` by rank (no more fit).
               A pipe's 200 cells are counted as ``tail`` prints them, so that the console and ``tail`` show an agent
               one column set
    chosen     the schema to lay out with, looked up already (``path`` and ``schema`` are then not used for it)
    """
    view = _OneRow(row, [k for k in expect if k not in row])
    if chosen is None:
        chosen = find_schema(path, view.keys, schema)
    if terminal is None:
        cols = layout([view], chosen, max_width=row_width() if max_width is None else max_width)
    else:
        cols = layout([view], chosen)
    present = set(view.keys)
    declared = {c.key for c in chosen.cols} if chosen is not None else set()
    out = _as_logged(cols, present, declared)
    wanted = _as_logged(layout([view], chosen), present, declared) if terminal is None else out
    if terminal is not None:
        cells = room(terminal)
        out = out[: cells // 2 + 1]  # (a printed column takes a cell and a space at least: no more than these fit)
        printed = ConsoleLayout(out, room=cells)
        printed.update(row)
        out = [c for c in out if c.key not in printed.hidden]
    shown = {c.key for c in out}
    return tuple(out), [c for c in wanted if c.key not in shown and c.key in row]


def _as_logged(cols: Sequence[Col], present: set[str], declared: set[str]) -> list[Col]:
    """A layout's columns as StepLogger prints them: the step at least :data:`STEP_WIDTH` wide, the keys present as
    logged (an alias's column under the alias), undeclared ones fitted to their values."""
    out: list[Col] = []
    for c in cols:
        if c.key == "step":
            out.append(c.with_(width=max(c.width, STEP_WIDTH), fmt=c.fmt or "d"))
        elif c.key in present:
            # "loss (as logged)" says nothing a legend line should be paid for (a short header still gets its key)
            if c.desc == f"{sanitize(c.key)} (as logged)":
                c = c.with_(desc="")
            # an undeclared key's width is its first value's: fitted to the later ones as they arrive (a loss from
            # 2.3 to .0623 keeps its digits), as a Col declared without a width is
            out.append(c if c.key in declared else c.with_(fit=True))
        else:  # a declared column read through an alias (StepLogger renders its keys as logged)
            alias = next((a for a in c.aliases if a in present), None)
            if alias is not None:
                out.append(c.with_(key=alias, aliases=()))
    return out


#: value types a layout reads without calling anything of the value's own
_PLAIN = frozenset({float, str, bool, type(None)})


def _plain(v: Any) -> bool:
    """Whether laying ``v`` out cannot raise: no code of its own runs (an int as long as its text can be made: str()
    refuses one of thousands of digits, sys.get_int_max_str_digits(), 640 at the least)."""
    if type(v) is tuple:
        return all(type(x) in _PLAIN or (type(x) is int and x.bit_length() < 2000) for x in v)
    return type(v) in _PLAIN or (type(v) is int and v.bit_length() < 2000)


def _fails(lay: Callable[[Mapping[str, Any]], object], values: Mapping[str, Any]) -> bool:
    try:
        lay(values)
    except Exception:
        return True
    return False


#: lines an AutoColumns says keys left out for values that cannot be laid out in, at most
MAX_SAID = 3
#: rows with new keys an AutoColumns lays out again, at most
MAX_GROWS = 32
#: keys the writer may add to a row beside those logged, each a key of the run for its readers (the clock, the arm,
#: runinfo.WRITER_KEY on a second writer's rows)
WRITER_KEYS = 3


class AutoColumns:
    """The automatic columns of one logger, kept up with the keys its rows bring.

    ``first(row, flat_row)`` lays out the first row (:func:`auto_columns`, with ``expect`` and ``schema``).
    ``knows(row)``: whether every top-level key of ``row`` was seen before (one set check a row).
    ``grow(row, flat_row)`` takes a row that brings new keys: the layout of every key seen so far (this row's values
    where it has them), or None where that prints the same columns (the new keys past the row's width). A nested key
    first seen under a known top-level key does not count. After :data:`MAX_GROWS` such rows (keys new on every
    row: per-sample names) the columns stay as they are and every row is known: a layout costs a pass over every
    key seen, and a header each time. Only the keys a reader of the run keeps are laid out: past ``MAX_KEYS`` a
    run's store drops the keys of a row that have no room (steptable.ingest.keycut), and so does this.
    """

    def __init__(self, path: str | os.PathLike[str] = "metrics.jsonl", *, expect: Sequence[str] = (),
                 schema: str | None = None, max_width: int | None = None) -> None:
        self.path = path
        self.expect = tuple(expect)
        self.schema = schema
        self.max_width = max_width
        self._known: set[str] = set()  # top-level keys of the rows seen
        self._values: dict[str, Any] = {}  # the latest value of each flat key laid out
        self._keys: tuple[str, ...] = ()  # the columns of the last layout
        self._grows = 0
        #: cells the last layout's rows may take after the level icon (None before the first)
        self.room: int | None = None
        #: columns of the keys the last layout would show but its width leaves out
        self.left_out: list[Col] = []
        self._place = 0  # the first of PLACES whose user schemas have not failed to be looked up
        self._topic = "autocols"  # the logger's report topic (given with each row)
        self._said: set[str] = set()  # keys said to be left out for a value that cannot be laid out
        self._lines = 0  # lines that said so

    def expect_more(self, keys: Iterable[str]) -> None:
        """Expect ``keys`` too (before the first row: a resumed run's columns of its earlier process)."""
        self.expect = tuple(dict.fromkeys([*self.expect, *keys]))

    def knows(self, row: Mapping[str, Any]) -> bool:
        return self._grows >= MAX_GROWS or self._known.issuperset(row)

    def first(self, row: Mapping[str, Any], flat_row: Mapping[str, Any]) -> tuple[Col, ...]:
        """The columns of the first row (``row`` as logged; ``flat_row``: nested keys spread, the step in it)."""
        self._known.update(row)
        self._values = {}
        self._take(flat_row)
        return self._lay_out()

    def grow(self, row: Mapping[str, Any], flat_row: Mapping[str, Any]) -> tuple[Col, ...] | None:
        """The columns once ``row`` (with keys not seen before) is seen, where they differ from the last layout's."""
        self._grows += 1
        self._known.update(row)
        if not self._take(flat_row):
            return None  # (every new key past the room: nothing to lay out)
        before = self._keys
        cols = self._lay_out()
        return None if self._keys == before else cols

    def columns(self, cells: Mapping[str, Any], step: Any, first: bool, topic: str) -> tuple[Col, ...] | None:
        """The columns for a logged row (``cells`` as read, its ``step``): the first row's (a row that cannot be laid
        out, a value that cannot be walked, gets the step alone), or a later row's with new keys where they change
        the columns (None: they stay; a failure keeps them too). Failures are reported once a topic."""
        self._topic = topic
        try:
            row = {**flat(dict(cells)), "step": step}
            return self.first(cells, row) if first else self.grow(cells, row)
        except Exception as e:
            if not first:
                report_once(f"{topic}-autocols-grow", f"steptable: new keys could not be laid out ({error_text(e)});"
                            " the columns stay as they were")
                return None
            report_once(f"{topic}-autocols",
                        f"steptable: no automatic columns from the first row ({error_text(e)}); the step only")
            try:
                return auto_layout({"step": step}, chosen=self._schema(["step"], None))[0]
            except Exception:  # (no schema at all could be looked up: the step alone, in its least width)
                return (Col("step", STEP_WIDTH, "step", "d"),)

    def _take(self, flat_row: Mapping[str, Any]) -> bool:
        """``flat_row``'s values as the latest, but for keys new past the room a run's store has: those it drops
        are not laid out (the console would show columns every reader shows empty, and a layout's cost grows with
        the square of the keys: seconds at 10k). Whether a key was taken that was not there before."""
        had = len(self._values)
        room = MAX_KEYS - WRITER_KEYS - had
        if len(flat_row) > room:
            new = {k: 0 for k in flat_row if k not in self._values}  # (0: all first seen in this row)
            if len(new) > room:
                gone = set(past_room(new, room))
                flat_row = {k: v for k, v in flat_row.items() if k not in gone}
        self._values.update(flat_row)
        return len(self._values) > had

    def _lay_out(self) -> tuple[Col, ...]:
        # (a width given is counted as tail prints; a terminal's by what the console prints in it)
        terminal = terminal_width() if self.max_width is None else None
        width = self.max_width or terminal or PIPE_WIDTH
        keys = [*(k for k in self.expect if k not in self._values), *self._values]
        chosen = self._schema(keys, self.schema)

        def lay(values: Mapping[str, Any]) -> tuple[tuple[Col, ...], list[Col]]:
            return auto_layout(values, expect=self.expect, max_width=width, terminal=terminal, chosen=chosen)

        try:
            cols, self.left_out = lay(self._values)
        except Exception as e:
            # a value that cannot be laid out (its repr() raises): that key is left out, not every other column
            bad = [k for k, v in self._values.items() if not _plain(v) and _fails(lay, {k: v})]
            if not bad:
                raise
            for k in bad:
                del self._values[k]
            # (the step is not left out: every layout has its column, measured without this value)
            self._say_left_out([k for k in bad if k != "step"], e)
            cols, self.left_out = lay(self._values)
        self.room = room(width)
        self._keys = tuple(c.key for c in cols)
        return cols

    def _schema(self, keys: Sequence[str], name: str | None) -> Schema:
        """The schema for ``keys`` (``name``: by name), looked up where the user schemas have not failed to be: a
        look-up that fails to read them (the working directory deleted under a console-only logger, whose rows go
        nowhere it could name; a ``steptable.toml`` that cannot be used) is said once, and the next place is used
        from then on, down to the built-ins. An unknown ``name`` raises KeyError."""
        while True:
            place = PLACES[self._place]
            try:
                return find_schema(self.path, keys, name, place)
            except (OSError, SchemaFileError) as e:
                if self._place == len(PLACES) - 1:
                    raise
                self._place += 1
                report_once(f"{self._topic}-schemas-{place}",
                            f"steptable: {_WITHOUT[place]} ({error_text(e)}); the console's columns are laid out "
                            f"with {_NOW[PLACES[self._place]]}")

    def _say_left_out(self, keys: Sequence[str], e: Exception) -> None:
        """Say that ``keys`` are left out of the columns (``e``: what laying them out raised), each key once, in
        :data:`MAX_SAID` lines at most (keys new on every row, each with such a value, would say one a row)."""
        new = [k for k in keys if k not in self._said]
        if not new or self._lines >= MAX_SAID:
            return
        self._said.update(new)
        self._lines += 1
        names = ", ".join(f"{sanitize(k):.40}" for k in new[:5]) + (f" and {len(new) - 5} more" if len(new) > 5 else "")
        last = "; later keys whose values cannot be laid out are left out unsaid" if self._lines == MAX_SAID else ""
        report_once(f"{self._topic}-left-out-{self._lines}",
                    f"steptable: {names}: left out of the printed columns, the value cannot be laid out "
                    f"({error_text(e)}){last}")

    @property
    def dropped(self) -> list[str]:
        """The keys of :attr:`left_out`."""
        return [c.key for c in self.left_out]
