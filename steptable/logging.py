"""setup_logging(): token-cheap loguru sinks for a training run.

stdout gets one ASCII level icon and the message (``I  step   rew ...``), written through ``tqdm.write`` so progress
bars survive; colour only on a terminal. A verbose file beside it gets timestamps and DEBUG lines.
"""

from __future__ import annotations

import errno
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from loguru import logger
from tqdm import tqdm

from steptable.formatting import char_cells
from steptable.rank import global_rank
from steptable.writer import open_append

ICONS = {"TRACE": "T", "DEBUG": "D", "INFO": "I", "SUCCESS": "S", "WARNING": "W", "ERROR": "E", "CRITICAL": "C"}

_handler_ids: list[int] = []
_removed_default = False


def use_colour(stream: Any = None) -> bool:
    """Colour on a terminal only. FORCE_COLOR (non-empty, not "0") forces it on; NO_COLOR (non-empty) or TERM=dumb
    turn it off."""
    force = os.environ.get("FORCE_COLOR", "")
    if force and force != "0":
        return True
    if os.environ.get("NO_COLOR", "") or os.environ.get("TERM", "") == "dumb":
        return False
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class ConsoleSink:
    """A loguru sink that writes through ``tqdm.write`` and never raises into the caller.

    A stdout that is gone (a closed pipe or file) is reported once on stderr and the console stays silent after it;
    a failure that may pass (a full non-blocking pipe or pty, a full disk under a redirect) costs only the messages
    written while it lasts. Either way the rows still reach the JSONL and the verbose file.
    """

    def __init__(self) -> None:
        self.failed: BaseException | None = None

    def __call__(self, message: Any) -> None:
        if self.failed is not None:
            return
        text = str(message)
        try:
            try:
                tqdm.write(text, file=sys.stdout, end="")
            except UnicodeEncodeError:  # a stdout that cannot encode a character (PYTHONIOENCODING=ascii, C locale)
                enc = getattr(sys.stdout, "encoding", None) or "ascii"
                tqdm.write(encodable(text, enc), file=sys.stdout, end="")
        except Exception as e:  # OSError / ValueError from a closed stream, or anything a replaced stdout raises
            gone = not isinstance(e, OSError) or e.errno in _GONE
            if gone:
                self.failed = e
            what = "" if gone else "; lines are dropped while it fails"
            report_once(
                f"stdout-{id(self)}",
                f"steptable: console output failed ({e!r}){what}; rows continue in the JSONL and log file",
            )


#: errors after which stdout will not come back (any other OSError, e.g. EAGAIN or ENOSPC, may pass)
_GONE = frozenset({errno.EPIPE, errno.EBADF, errno.ECONNRESET, errno.ENXIO, errno.ENODEV})


def encodable(text: str, encoding: str) -> str:
    """``text`` with each character that ``encoding`` cannot write replaced by as many '?' as the cells it took,
    so a row keeps its width on an ASCII-only terminal."""
    out = []
    for ch, cells in char_cells(text):  # cells in context: an emoji sequence counts once, as it was padded
        try:
            ch.encode(encoding)
        except UnicodeEncodeError:
            out.append("?" * cells)
        except LookupError:  # an unknown encoding name
            out.append(ch if ch.isascii() else "?" * cells)
        else:
            out.append(ch)
    return "".join(out)


class FileSink:
    """The verbose log file as a loguru sink: opened on first use, flushed per message, never raising. A failure
    (disk full, the directory deleted) is reported once; later messages try again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: Any = None

    def write(self, message: Any) -> None:
        try:
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fh = open(open_append(self.path), "a", encoding="utf-8", errors="replace")
            self._fh.write(str(message))
            self._fh.flush()
        except (OSError, ValueError) as e:
            self.stop()
            report_once(f"logfile-write:{self.path}", f"steptable: cannot write the verbose log {self.path} ({e})")

    def stop(self) -> None:
        if self._fh is not None:
            try:
                self._fh.close()
            except (OSError, ValueError):
                pass
            self._fh = None


def _console_record(record: Any) -> bool:
    return bool(record["extra"].get("steptable_console", True))


_reported: set[str] = set()


def installed() -> bool:
    """Are setup_logging's sinks in place (its verbose file among them)?"""
    return bool(_handler_ids)


def report_once(topic: str, text: str) -> None:
    """Say ``text`` on stderr the first time ``topic`` comes up; never raises."""
    if topic in _reported:
        return
    _reported.add(topic)
    say(text)


def say(text: str) -> None:
    """``text`` on stderr, a line; never raises."""
    try:
        sys.stderr.write(text.rstrip("\n") + "\n")
        sys.stderr.flush()
    except Exception:  # stderr gone too: nothing left to tell
        pass


_log_paths: dict[tuple[str, str, int], Path] = {}


def setup_logging(
    run_id: str,
    log_dir: str | os.PathLike[str] = "logs",
    level: str = "INFO",
    file_level: str = "DEBUG",
    colour: bool | None = None,
) -> Path:
    """Install the console and verbose-file sinks and return the verbose log's path.

    Calling it again replaces the sinks it installed before (no duplicates); the same ``run_id`` and ``log_dir``
    keep writing to the same verbose file within a process. On a non-zero distributed rank the
    console shows warnings and errors only, prefixed with the rank, and the file is suffixed with it.
    """
    global _removed_default
    for hid in _handler_ids:
        try:
            logger.remove(hid)
        except ValueError:
            pass
    _handler_ids.clear()
    if not _removed_default:
        # loguru's own stderr handler would print every row a second time, in its long format.
        try:
            logger.remove(0)
        except ValueError:
            pass
        _removed_default = True
    for name, icon in ICONS.items():
        logger.level(name, icon=icon)

    rank = global_rank()
    colourise = use_colour() if colour is None else colour
    prefix = "" if rank == 0 else f"[r{rank}] "
    fmt = ("<level>{level.icon}</level> " if colourise else "{level.icon} ") + prefix.replace("{", "{{") + "{message}"
    _handler_ids.append(
        logger.add(
            ConsoleSink(),
            level=level if rank == 0 else "WARNING",
            format=fmt,
            colorize=colourise,
            filter=_console_record,
        )
    )

    directory = Path(log_dir)
    # The same run set up again in this process keeps its verbose file (a second stamp would split the log).
    key = (str(run_id), os.path.abspath(directory), rank)
    path = _log_paths.get(key)
    if path is None:
        stamp = datetime.now().strftime("%Y%m%dT%H%M%S")
        suffix = "" if rank == 0 else f".rank{rank}"
        path = _log_paths[key] = directory / f"{stamp}_{_safe_name(run_id)}{suffix}.log"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        sink = FileSink(path)
        sink.write("")  # open it now, so a directory that cannot hold it is reported here
        if sink._fh is not None:
            _handler_ids.append(
                logger.add(
                    sink,
                    level=file_level,
                    format="{time:YYYY-MM-DD HH:mm:ss.SSS} | {level: <8} | {file}:{line} | {message}",
                    colorize=False,
                    catch=True,
                )
            )
    except OSError as e:
        report_once(f"logfile:{path}", f"steptable: cannot open the verbose log {path} ({e}); console only")
    return path


def _safe_name(run_id: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(run_id))[:80] or "run"
