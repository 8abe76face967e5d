"""One writer per arm of a run directory: an advisory lock (``flock``) on a lock file beside the JSONL.

The process that writes an arm's rows holds ``.metrics.jsonl.lock`` (``.metrics.jsonl.<arm>.lock`` for a named arm;
arms sharing a directory each hold their own) until it closes; the lock file names its pid. The kernel releases a
``flock`` when its process dies, so a stale lock (a run killed with SIGKILL) is no lock. A second process that finds
the lock held is told once, with the holder's pid, and writes on: a training run's rows are never dropped for this
(its rows interleave with the first's in the one file, each marked with its pid under ``runinfo.WRITER_KEY``, so
readers show them apart and say "two writers"). Where ``flock`` is missing
(Windows), refused by the file system (ENOLCK) or the lock file cannot be made, there is no check. Nothing here
raises.
"""

from __future__ import annotations

import os
from pathlib import Path

from steptable.logger.sinks import report_once
from steptable.table.formatting import sanitize
from steptable.table.runinfo import name_part

try:
    import fcntl
except ImportError:  # (Windows)
    fcntl = None  # type: ignore[assignment]


def lock_path(jsonl: Path, arm: object) -> Path:
    """The lock file of ``arm``'s rows in ``jsonl``."""
    part = "" if arm is None or arm == "" else "." + name_part(str(arm))
    return jsonl.with_name(f".{jsonl.name}{part}.lock")


class WriterLock:
    """The lock of one arm's rows; :meth:`acquire` once, :meth:`release` at close."""

    def __init__(self, jsonl: Path, arm: object) -> None:
        self.path = lock_path(jsonl, arm)
        self._jsonl = jsonl
        self._fd: int | None = None
        #: the pid of the process that held the lock when :meth:`acquire` found it held (None: not known)
        self.holder: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> str | None:
        """Take the lock. None when taken (or there is no way to check); else what to tell the user: another live
        process holds it."""
        if fcntl is None or self._fd is not None:
            return None
        for _ in range(3):  # (a lock file replaced between the open and the flock: the one at the path, again)
            try:  # (taken before the first row is written: the run's directory may not be there yet)
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
            except OSError:
                return None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return self._busy(fd)
            except OSError:  # (ENOLCK: a file system without locks, NFS with no lock daemon: no way to check)
                os.close(fd)
                return None
            if self._at_path(fd):
                break
            os.close(fd)  # a lock on a file no other writer will look at is no lock
        else:
            return None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        except OSError:
            pass  # (the lock holds without the pid: the message then says "another process")
        self._fd = fd
        return None

    def _at_path(self, fd: int) -> bool:
        """Is the file ``fd`` locks still the lock file at the path?"""
        try:
            st, now = os.fstat(fd), os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino)

    def _busy(self, fd: int) -> str:
        """The lock file ``fd`` is locked by another process: ``fd`` closed, what to tell the user."""
        try:
            holder = os.read(fd, 32).decode("ascii", "replace").strip()
        except OSError:
            holder = ""
        os.close(fd)
        self.holder = int(holder) if holder.isdigit() else None
        who = (f"another StepLogger of this process ({holder})" if self.holder == os.getpid()
               else f"process {sanitize(holder)}" if holder.isdigit() else "another process")
        return (f"{who} is writing this arm's rows to {sanitize(str(self._jsonl))} too (lock "
                f"{sanitize(str(self.path))}); both write on, their rows interleaved in that file")

    def take(self, topic: str) -> int | None:
        """:meth:`acquire`, another live process holding the lock told once (report topic ``topic``; never
        raised: logging must not break the run). Our pid where that process writes this arm's rows too (our rows
        are then marked with it, ``runinfo.WRITER_KEY``, so that readers show them apart); else None (held by this
        process: a logger left open, as a notebook's cell run again leaves it, is not a second writer)."""
        try:
            if (busy := self.acquire()) is not None:
                report_once(topic, f"steptable: {busy}")
                return os.getpid() if self.holder != os.getpid() else None
        except Exception:
            pass
        return None

    def again(self, topic: str) -> int | None:
        """:meth:`take` again where the lock file at the path is not the one held (asked where the JSONL was found
        deleted: its directory deleted and made again, maybe by a second run of the arm, which found the lock free)."""
        if self._fd is not None and self._at_path(self._fd):
            return None
        self.release()
        return self.take(topic)

    def after_fork(self) -> None:
        """In a child made by fork() (a DataLoader worker): its copy of the lock's descriptor closed, or the flock
        (held by the open file, which the child shares) would outlive the parent's release and the parent itself.
        Closed without unlocking: an unlock from here would free the parent's lock."""
        self.release()

    def release(self) -> None:
        """Let the lock go (closing the descriptor releases the flock). The file stays: removing it would race a
        third process that opened it meanwhile and locks an unlinked file."""
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
