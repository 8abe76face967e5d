"""``steptable tail -f`` stopped while its follower is still inside a read it cannot cut short (the first read of a
large sweep, a long pass): the status is that of the rows checked before it, never of a state being changed.
Each case runs the command in a subprocess (a stop signal's handling outlives the command, as it should in a process
that is ending) whose follower holds on inside the read until the test has sent TERM and the process has ended."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from tests.cli.helpers import default_signals, finish
from tests.helpers import reap, write_rows

NAN = float("nan")

#: tail -f in a child whose Follower.<method> says "inside" on stderr and then never returns (scan: after reading)
HELD = """
import sys, threading
from steptable.cli import tail
from steptable.cli.main import main
from steptable.ingest import Follower

method = sys.argv[1]
real = getattr(Follower, method)
tail.STOP_WAIT_S = 0.3

def held(self, *a):
    if method == "scan":
        real(self, *a)
    sys.stderr.write("inside\\n")
    sys.stderr.flush()
    threading.Event().wait()

setattr(Follower, method, held)
sys.exit(main(sys.argv[2:]))
"""


def _stopped_inside(method: str, *argv: str) -> tuple[int, str, str]:
    """(status, stdout, stderr) of ``steptable tail -f ARGV`` sent TERM once its follower is held inside
    ``method``."""
    p = subprocess.Popen([sys.executable, "-c", HELD, method, "tail", "-f", *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)
    try:
        assert p.stderr is not None
        assert p.stderr.readline() == "inside\n"
        p.send_signal(signal.SIGTERM)
        out, err = finish(p)
        return p.returncode, out, err
    finally:
        reap(p)


def _nan_run(root: Path) -> None:
    write_rows(root / "a" / "metrics.jsonl", [{"step": s, "loss": NAN if s == 3 else 1.0} for s in range(5)])


def test_a_stop_before_the_first_view_checked_nothing(tmp_path: Path) -> None:
    """`timeout 60 steptable tail -f --alerts-only logs/` over a sweep whose first read outlasts the timeout: the
    rows read so far were never checked (their alert not even said), so the gate fails (2) and says why; it must not
    pass as "no alerts"."""
    _nan_run(tmp_path)
    rc, out, err = _stopped_inside("scan", "--alerts-only", str(tmp_path))
    assert rc == 2 and out == "", (rc, out, err)
    assert "stopped before the first read ended: nothing checked" in err and "Traceback" not in err


def test_a_stop_during_a_later_read_keeps_the_status_of_the_rows_checked(tmp_path: Path) -> None:
    """The first view said an error alert; the stop comes while a later read is under way: status 1."""
    _nan_run(tmp_path)
    rc, out, err = _stopped_inside("run", "--alerts-only", str(tmp_path))
    assert rc == 1 and "step 3 loss non-finite" in out and "Traceback" not in err, (rc, out, err)


def test_a_stop_during_a_later_read_with_no_row_before_it_checked_nothing(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "metrics.jsonl").write_text("")
    rc, _, err = _stopped_inside("run", str(tmp_path))
    assert rc == 2 and "stopped during a read, with no row read before it: nothing checked" in err, (rc, err)
