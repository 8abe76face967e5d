"""``steptable tail -f`` driven by hand in the test's process: the follower scans when the test says so, and the
Tail prints what is new on string streams."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from steptable.alerts.replaced import read_replaced
from steptable.cli.main import _parser
from steptable.cli.tailout import Tail
from steptable.ingest import Follower


class Live:
    """``steptable tail -f`` driven by hand: write rows, then :meth:`step` prints what is new."""

    def __init__(self, root: Path, argv: list[str]) -> None:
        self.out, self.err = io.StringIO(), io.StringIO()
        self.follower = Follower([root], on_resume=read_replaced)
        self.tail = Tail(_parser().parse_args(["tail", "-f", *argv, str(root)]), self.out, self.err)

    def step(self) -> None:
        self.follower.scan()
        self.tail.emit(self.follower)


def follow_tail(root: Path, argv: list[str]) -> tuple[Any, Any, io.StringIO, io.StringIO]:
    """(follower, Tail, stdout, stderr) of ``steptable tail -f ARGV ROOT`` (a follower without the replaced rows'
    alerts); :func:`emit` prints what is new."""
    out, err = io.StringIO(), io.StringIO()
    follower = Follower([root])
    return follower, Tail(_parser().parse_args(["tail", "-f", *argv, str(root)]), out, err), out, err


def emit(follower: Any, tail: Any) -> None:
    """One poll of a watch made by :func:`follow_tail`: scan, then print what is new."""
    follower.scan()
    tail.emit(follower)
