"""ByteTail (steptable.ingest.files.bytetail): a growing binary file read by byte offset: new bytes in chunks, a
record cut in half waiting in ``pending``, a reset when the file shrank or was replaced, a missing file."""

from __future__ import annotations

import os
from pathlib import Path

from steptable.ingest.files.bytetail import ByteTail


def test_reads_what_is_new_in_chunks_and_consumes_from_the_front(tmp_path: Path) -> None:
    path = tmp_path / "run.bin"
    tail = ByteTail(path, chunk=4)
    assert tail.read() == (False, False) and tail.missing and not tail.opened
    path.write_bytes(b"abcdef")
    assert tail.read() == (False, True) and tail.pending == b"abcd" and tail.more  # at most a chunk
    assert not tail.missing and tail.opened
    tail.consume(3)  # a whole record taken; "d" (half a record) waits
    assert tail.offset == 3 and tail.pending == b"d"
    assert tail.read() == (False, True) and tail.pending == b"def" and not tail.more
    assert tail.read() == (False, False)  # nothing new
    with path.open("ab") as f:
        f.write(b"gh")
    assert tail.read() == (False, True) and tail.pending == b"defgh" and tail.read_to == 8


def test_a_shrunk_or_replaced_file_is_read_again_from_its_first_byte(tmp_path: Path) -> None:
    path = tmp_path / "run.bin"
    path.write_bytes(b"abcdef")
    tail = ByteTail(path)
    tail.read()
    tail.consume(6)
    path.write_bytes(b"xy")  # shrank below what was read
    assert tail.read() == (True, True) and tail.pending == b"xy" and tail.offset == 0
    new = tmp_path / "new.bin"
    new.write_bytes(b"0123456789")
    os.replace(new, path)  # another inode under the old name
    assert tail.read() == (True, True) and tail.pending == b"0123456789"
