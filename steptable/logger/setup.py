"""setup_logging(): token-cheap loguru sinks for a training run.

stdout gets one ASCII level icon and the message (``I  step   rew ...``), written between tqdm's progress bars (cleared
and redrawn around it) and flushed at once; colour only on a terminal. A verbose file beside it gets timestamps and
DEBUG lines, and steptable's own notices (which go to stderr, also between the bars).

This module installs them (the console's rank filter and icon format, the verbose file's path per run and rank);
the sinks themselves, and the notices, are ``steptable.logger.sinks``.
"""

from __future__ import annotations

import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from loguru import logger

import steptable.logger.sinks as sinks
from steptable.logger.rank import LazyRank
from steptable.logger.sinks import ConsoleSink, FileSink, report_once, say

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


def _console_record(record: Any) -> bool:
    return bool(record["extra"].get("steptable_console", True))


class _ConsoleFilter:
    """Rank 0 shows ``level`` and up; another rank warnings and errors only."""

    def __init__(self, rank: LazyRank, level: int) -> None:
        self.rank = rank
        self.level = level

    def __call__(self, record: Any) -> bool:
        if not _console_record(record):
            return False
        return bool(record["level"].no >= (self.level if self.rank() == 0 else _WARNING))


class _ConsoleFormat:
    """The icon, ``[rN] `` on a non-zero rank, and the message."""

    def __init__(self, rank: LazyRank, colourise: bool) -> None:
        self.rank = rank
        self.icon = "<level>{level.icon}</level> " if colourise else "{level.icon} "

    def __call__(self, record: Any) -> str:
        rank = self.rank.value  # (as the console filter, which passed this record, has just found it)
        return self.icon + ("" if rank == 0 else f"[r{rank}] ") + "{message}\n{exception}"


_WARNING = 30  # loguru's WARNING


def installed() -> bool:
    """Are setup_logging's sinks in place (its verbose file among them)?"""
    return bool(_handler_ids)


_installs = 0  # setup_logging calls so far: tells one installation from another


def installation() -> int:
    """Which call of setup_logging put the sinks in place now (0: none did): a caller that installed them can tell
    later whether they are still its own."""
    return _installs if _handler_ids else 0


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
    global _removed_default, _direct, _installs
    _installs += 1
    for hid in _handler_ids:
        try:
            logger.remove(hid)
        except ValueError:
            pass
    _handler_ids.clear()
    sinks._file_sink = None
    sinks._in_child = False
    if not _removed_default:
        # loguru's own stderr handler would print every row a second time, in its long format.
        try:
            logger.remove(0)
        except ValueError:
            pass
        _removed_default = True
    for name, icon in ICONS.items():
        logger.level(name, icon=icon)

    # Set up before init_process_group (torch.multiprocessing.spawn), a process reads rank 0 until its group
    # exists: the sinks ask again then, so its console and file become its rank's.
    rank = LazyRank()
    colourise = use_colour() if colour is None else colour
    level_no = _level_no(level)
    console = ConsoleSink()
    _handler_ids.append(
        logger.add(
            console,
            level=min(level_no, _WARNING),
            format=_ConsoleFormat(rank, colourise),
            colorize=colourise,
            filter=_ConsoleFilter(rank, level_no),
        )
    )
    _direct = None

    directory = Path(log_dir)
    try:
        absolute = os.path.abspath(directory)  # (a later os.chdir must not move the file)
    except OSError:  # the working directory is gone (deleted under the job): the file cannot be opened, said below
        absolute = os.fspath(directory)
    where = (str(run_id), absolute)
    path = _log_path(where, rank.value)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        sink = FileSink(path, (lambda: _log_path(where, rank())) if rank.value == 0 else None)
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
            sinks._file_sink = sink if _level_no(file_level) <= _WARNING else None
            if not colourise and max(level_no, _level_no(file_level)) <= _INFO:
                _direct = _Direct(console, sink, rank, list(_handler_ids))
    except (OSError, ValueError) as e:  # (ValueError: a NUL in the path)
        report_once(f"logfile:{path}", f"steptable: cannot open the verbose log {path} ({e}); console only")
    return directory / path.name


_INFO = 20  # loguru's INFO


class _Direct:
    """The console and verbose-file lines of an INFO message written as loguru writes them through setup_logging's
    sinks, without loguru's record (a quarter of a logged row's cost): only while those sinks are loguru's only
    handlers, without colour, on rank 0, and with both levels letting INFO through."""

    def __init__(self, console: ConsoleSink, file: FileSink, rank: LazyRank, handlers: list[int]) -> None:
        self.console = console
        self.file = file
        self.rank = rank
        self.handlers = set(handlers)

    def __call__(self, text: str, frame: Any) -> bool:
        core = getattr(logger, "_core", None)
        handlers = getattr(core, "handlers", None)
        if not isinstance(handlers, dict) or handlers.keys() != self.handlers or self.rank() != 0 or sinks._in_child:
            return False  # another sink (the trainer's own) gets loguru's record; a forked child writes plainly
        now = datetime.now()
        code = frame.f_code
        self.console(f"I {text}\n")
        self.file.write(f"{now:%Y-%m-%d %H:%M:%S}.{now.microsecond // 1000:03d} | INFO     | "
                        f"{os.path.basename(code.co_filename)}:{frame.f_lineno} | {text}\n")
        return True


_direct: _Direct | None = None


def write_info(text: str, frame: Any) -> bool:
    """Write the INFO line ``text``, logged from ``frame``, to setup_logging's console and verbose file as loguru
    would (the same lines); False where that cannot be done the same way: log it through loguru then."""
    direct = _direct
    return direct is not None and direct(text, frame)


def emit(text: str, level: str, console: bool) -> None:
    """A StepLogger's line through loguru (a row: straight to setup_logging's sinks where that writes loguru's very
    lines, a quarter of a row's cost), the verbose file naming the caller's line. ``console`` False: a TUI owns the
    terminal, rows are not written and an alert goes to the verbose file only (without setup_logging's sinks,
    loguru's default handler would paint it over the TUI)."""
    if not console:
        if level != "INFO" and installed():
            logger.bind(steptable_console=False).opt(depth=_caller_depth()).log(level, text)
        return
    depth = _caller_depth()
    if level == "INFO" and write_info(text, sys._getframe(depth)):
        return
    logger.opt(depth=depth).log(level, text)


def warn(text: str, console: bool) -> None:
    """A StepLogger's warning: through loguru (``console`` False: to the verbose file only); with no verbose file
    and no console, on stderr, short (the JSONL writer says each failure episode once: its start, and that it
    works again)."""
    if not console and not installed():
        say(text)
        return
    try:
        logger.bind(steptable_console=console).opt(depth=_caller_depth()).warning(text)
    except Exception:
        report_once(text, text)


def _caller_depth() -> int:
    """loguru ``depth`` of the first frame outside steptable, so the verbose file names the caller's line."""
    try:
        frame = sys._getframe(2)
    except ValueError:  # a shallower stack than any steptable caller has: name the nearest frame
        return 1
    depth = 1
    while str(frame.f_globals.get("__name__", "")).startswith("steptable.") and frame.f_back is not None:
        frame = frame.f_back
        depth += 1
    return depth


def _level_no(level: str | int) -> int:
    return logger.level(level).no if isinstance(level, str) else int(level)


_stamps: dict[tuple[str, str], str] = {}


def _log_path(where: tuple[str, str], rank: int) -> Path:
    """The verbose file of run ``where`` (run id, absolute directory) on ``rank``. The same run set up again in this
    process keeps its file (a second stamp would split the log); a rank learnt later gets the run's stamp."""
    key = (*where, rank)
    path = _log_paths.get(key)
    if path is None:
        stamp = _stamps.setdefault(where, datetime.now().strftime("%Y%m%dT%H%M%S"))
        suffix = "" if rank == 0 else f".rank{rank}"
        path = _log_paths[key] = Path(where[1]) / f"{stamp}_{_safe_name(where[0])}{suffix}.log"
    return path


def _safe_name(run_id: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(run_id))[:80] or "run"
