"""JsonlParser: chunks of complete JSONL lines -> :class:`Parsed` batches, fast path first, line by line when needed.

Per chunk: cheap clean-up (non-finite literals, BOMs), then the typed fast path (columns, no per-row dicts) if a
shape is known and the chunk fits it, else a dict batch decode, else line by line with repairs and a report per bad
line. After a fast-path miss the fast path rests for a few chunks (doubling up to 64) so a file it never fits does
not pay for it twice; a new key or type learned line by line makes it try again at once.

Step resolution (the store only ever sees int steps): the first candidate key (``STEP_KEYS``) a row carries becomes
the file's step key; a file with none numbers its rows by position (0, 1, 2...). A row without the step in a file
that has one is placed after the last step (never merged into that step's row) and reported, once a file; with
``carry_step`` it is in the last step's row, unreported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from steptable.ingest.jsonfix import NONFINITE_TOKENS, find_token, fix_chunk, quote_nonfinite
from steptable.ingest.parse import MISSING, BadLine, LineError, decode_line, flatten, step_of
from steptable.ingest.parsed import Parsed, stepless
from steptable.ingest.readers.fastpath import Shape, TypedDecoder, learn
from steptable.table.stepkeys import step_key_among

_DICTS = msgspec.json.Decoder()
MAX_REST = 64
#: bytes of lines a reader that builds its own chunks hands to one :meth:`JsonlParser.parse` at most: the rows and
#: columns of a batch decode stay in the CPU's cache (the same 8 MB of lines decode about 1.5x slower at once)
PIECE = 256 * 1024
LineNo = int | Callable[[], int]
#: :meth:`JsonlParser.state`: (step key, shape as nested (key, kind) pairs in order, shape consistent, decoder
#: stale, chunks the fast path rests, its back-off, non-finite tokens rewritten first, which tokens)
ParserState = tuple[str | None, tuple[Any, ...], bool, bool, int, int, bool, tuple[bytes, ...]]


def _ordered(shape: Shape) -> tuple[Any, ...]:
    """``shape`` as nested pairs: equal only with its keys in the same order (the typed decoder's columns are)."""
    return tuple((k, _ordered(v) if type(v) is dict else v) for k, v in shape.items())


def _unordered(pairs: tuple[Any, ...]) -> Shape:
    return {k: _unordered(v) if type(v) is tuple else v for k, v in pairs}


class JsonlParser:
    """A JSONL file read chunk by chunk: its step key, row count and learned shape carry over between chunks."""

    def __init__(self, label: str, step_keys: tuple[str, ...] = (), carry_step: bool = False) -> None:
        """``step_keys``: the step key is the first of these the first row with a step holds (a tracker's row
        counter last, after the trainer's own step it may carry); none: any candidate (table.stepkeys).
        ``carry_step``: a row without the step key, once there is a step, is in the last step's row, unreported
        (a tracker's record logged between steps: W&B's evaluation by a step metric of its own)."""
        self.label = label
        self.step_keys = step_keys
        self.carry_step = carry_step
        self.reset()

    def reset(self) -> None:
        """Forget the step key, the row count and the shape: the file is read again from its start."""
        self.step_key: str | None = None
        self.ordinal = 0  # good rows so far: the position of the next row
        self.last_step: int | None = None
        self._told_stepless = False  # a row without a step was reported (once a file)
        self._shape: Shape = {}
        self._shape_ok = True
        self._typed: TypedDecoder | None = None
        self._stale = False  # shape changed since the typed decoder was built
        self._rest = 0
        self._backoff = 1
        self._fix_first = False
        self._needles: tuple[bytes, ...] = ()
        self.fast_chunks = 0
        self.slow_chunks = 0

    @property
    def shape(self) -> Shape:
        """The nested structure of the rows read so far (every key a row held; see :mod:`.fastpath`)."""
        return self._shape

    def key_order(self) -> tuple[str, ...] | None:
        """The keys of a row in the order the next chunk is decoded fastest in (the typed decoder's fields); None
        while there is no typed decoder."""
        typed = self._typed_decoder()
        return None if typed is None else typed.keys

    def state(self) -> ParserState:
        """What the next chunk's :class:`Parsed` depends on besides the chunk, the rows' count, the last step and
        whether a stepless row was told (which only a stepless row or a file without a step key reads): two parsers
        in equal states parse the same chunks into equal results, row counts and last steps aside. (The typed
        decoder a changed shape asks for is built now, as the next parse would build it first.)"""
        self._typed_decoder()
        return (self.step_key, _ordered(self._shape), self._shape_ok, self._stale, self._rest, self._backoff,
                self._fix_first, self._needles)

    def carry_on(self, state: ParserState, rows: int, last_step: int | None, fast: int, slow: int) -> None:
        """Go on as if this parser had parsed what a parser in this parser's :meth:`state` then parsed apart
        (steptable.ingest.splitread): ``rows`` rows up to ``last_step``, none without a step, ending in ``state``
        after ``fast`` chunks on the fast path and ``slow`` line by line."""
        self.step_key, shape, self._shape_ok, self._stale, self._rest, self._backoff, self._fix_first, \
            self._needles = state
        self._shape = _unordered(shape)
        self._typed = None
        if self._shape_ok and self._shape and not self._stale:  # (the decoder the other parser used last)
            try:
                self._typed = TypedDecoder(self._shape, self.step_key, self.carry_step)
            except (ValueError, TypeError):
                pass
        self.ordinal += rows
        if rows:
            self.last_step = last_step
        self.fast_chunks += fast
        self.slow_chunks += slow

    def parse(self, chunk: bytes, lineno: LineNo) -> Parsed:
        """Parse complete lines (``chunk`` ends with a newline). ``lineno``: the 1-based number of the first line, or
        a callable giving it (counting lines costs; only the tolerant path needs them).

        Non-finite literals: a chunk is decoded as is first and rewritten only when that fails and it holds one,
        except while the previous chunk held some (a NaN-heavy file is rewritten first, not decoded twice)."""
        fixed = False  # fix_chunk with every token and BOMs applied
        typed = self._typed_decoder()
        if typed is not None and self._rest > 0:
            self._rest -= 1
        elif typed is not None:
            if self._fix_first:  # only the tokens this file has shown so far: one scan each
                clean = quote_nonfinite(chunk, self._needles)
                self._fix_first, chunk = clean is not chunk, clean
            cols = self._carried(typed.decode(chunk))
            if cols is None:
                self._needles = tuple(n for n in NONFINITE_TOKENS if n in self._needles or find_token(chunk, n) >= 0)
                clean = fix_chunk(chunk)
                fixed = True
                if clean is not chunk:
                    self._fix_first, chunk = True, clean
                    cols = self._carried(typed.decode(chunk))
            if cols is not None:
                self._backoff = 1
                self.fast_chunks += 1
                return self._from_cols(cols, typed)
            self._rest = self._backoff
            self._backoff = min(self._backoff * 2, MAX_REST)
        self.slow_chunks += 1
        return self._tolerant(chunk if fixed else fix_chunk(chunk), lineno)

    def _typed_decoder(self) -> TypedDecoder | None:
        if self._stale and self._shape_ok and self._shape:
            self._stale = False
            self._rest = 0
            try:
                self._typed = TypedDecoder(self._shape, self.step_key, self.carry_step)
            except (ValueError, TypeError):
                self._typed = None
        return self._typed if self._shape_ok else None

    def _carried(self, cols: dict[str, Any] | None) -> dict[str, Any] | None:
        """``cols`` with each step a row lacked (``carry_step``) the one before it, as :meth:`_step` gives it; None
        where the first lacks one with no step before it (the tolerant path places and reports it)."""
        if cols is None or not self.carry_step or self.step_key is None or MISSING not in (col := cols[self.step_key]):
            return cols
        last, steps = self.last_step, []
        for s in col:
            if s is MISSING:
                if last is None:
                    return None
                s = last
            steps.append(s)
            last = s
        cols[self.step_key] = steps
        return cols

    def _from_cols(self, cols: dict[str, Any], typed: TypedDecoder) -> Parsed:
        n = len(next(iter(cols.values()))) if cols else 0
        if self.step_key is not None:
            steps: Any = cols[self.step_key]
        else:
            steps = range(self.ordinal, self.ordinal + n)
        self.ordinal += n
        if n:
            self.last_step = steps[-1]
        return Parsed(steps=steps, cols=cols, int_keys=typed.int_keys_frozen, step_key=self.step_key)

    def _tolerant(self, chunk: bytes, first: LineNo) -> Parsed:
        lineno = first() if callable(first) else first
        nlines = chunk.count(b"\n") + (0 if chunk.endswith(b"\n") else 1)
        bad: list[BadLine] = []
        raw: list[tuple[int, dict[str, Any]]] = []
        try:
            objs = _DICTS.decode_lines(chunk)
            if len(objs) != nlines or not all(type(o) is dict for o in objs):
                raise ValueError
            raw = list(zip(range(lineno, lineno + nlines), objs, strict=True))
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, ValueError, RecursionError):
            raw = []
            for i, line in enumerate(chunk.split(b"\n")[:nlines]):
                no = lineno + i

                def warn(reason: str, no: int = no) -> None:
                    bad.append(BadLine(self.label, no, reason))

                try:
                    obj = decode_line(line, warn)
                except LineError as e:
                    bad.append(BadLine(self.label, no, str(e)))
                    continue
                if obj is not None:
                    raw.append((no, obj))
        steps: list[int] = []
        rows: list[dict[str, Any]] = []
        for no, obj in raw:
            try:  # a decoder that takes deeper nesting than Python's recursion limit (msgspec on 3.12) gets here
                if self._shape_ok:
                    ok, changed = learn(self._shape, obj)
                    self._shape_ok = ok
                    self._stale = self._stale or changed
                row = flatten(obj)
            except RecursionError:
                bad.append(BadLine(self.label, no, "JSON nested too deeply"))
                continue
            steps.append(self._step(row, no, bad))
            rows.append(row)
        return Parsed(steps=steps, rows=rows, bad=bad, step_key=self.step_key)

    def _step(self, row: dict[str, Any], lineno: int, bad: list[BadLine]) -> int:
        if self.step_key is None:
            if self.step_keys:
                k = next((c for c in self.step_keys if step_of(row.get(c)) is not None), None)
            else:
                k = step_key_among(row, lambda k: step_of(row[k]) is not None)
            if k is not None:
                self.step_key = k
                self._stale = True  # the typed decoder must now require it
        step: int | None = None
        if self.step_key is not None:
            got = row.get(self.step_key, MISSING)
            step = step_of(got)
            if step is None and got is MISSING and self.carry_step and self.last_step is not None:
                step = self.last_step
            elif step is None:
                step, note, once = stepless(self.label, lineno, self.step_key, got, self.last_step, self.ordinal)
                if not (once and self._told_stepless):
                    self._told_stepless = self._told_stepless or once
                    bad.append(note)
            row[self.step_key] = step
        else:
            step = self.ordinal
        self.ordinal += 1
        self.last_step = step
        return step
