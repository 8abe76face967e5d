"""Ingest: tail, parse and store the metrics files of training runs. Pure (no textual, torch or loguru).

- :func:`load` / :class:`Follower`: every run under some paths (``scan()`` once, ``run()`` live in a thread);
- :class:`RunStore`: the columnar table of one run, the contract viewers read;
- :func:`discover`: what is a run, its id, arm and side files;
- :func:`preview_tail`: the last rows of a huge file, fast;
- :func:`decode_line`, :func:`flatten`, :class:`JsonlParser`, :class:`ConsoleParser`, :class:`FileTail`: the pieces.
"""

from steptable.ingest.files.discover import Candidate, discover
from steptable.ingest.files.follow import Follower, load
from steptable.ingest.files.preview import preview_tail
from steptable.ingest.files.tail import FileTail
from steptable.ingest.parse import MISSING, STEP_KEYS, BadLine, LineError, decode_line, flatten
from steptable.ingest.parsed import Parsed
from steptable.ingest.readers.console import ConsoleParser, parse_console_line
from steptable.ingest.readers.hf import parse_trainer_state
from steptable.ingest.readers.jsonl import JsonlParser
from steptable.ingest.store import RunStore

__all__ = [
    "MISSING",
    "STEP_KEYS",
    "BadLine",
    "Candidate",
    "ConsoleParser",
    "FileTail",
    "Follower",
    "JsonlParser",
    "LineError",
    "Parsed",
    "RunStore",
    "decode_line",
    "discover",
    "flatten",
    "load",
    "parse_console_line",
    "parse_trainer_state",
    "preview_tail",
]
