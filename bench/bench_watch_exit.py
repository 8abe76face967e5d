"""How soon ``steptable watch`` exits on q, Ctrl-C and SIGTERM while it parses the worst pathological lines, in a
real pty (the app draws on it as on a terminal; keys are typed into it).

    python bench/bench_watch_exit.py               # 4 MB lines, 3 tries per case, key and delay
    python bench/bench_watch_exit.py --tries 1 --size 1000000

Each case is a file of 1,000 ordinary rows whose last line is one of bench_fuzz's worst lines (``--size`` bytes);
the anchor is the same file without it (the app's ordinary exit). The stop comes 0.2 s, 0.6 s and 1.2 s after the
app first drew (its reader is parsing then: the 4 MB NaN list takes seconds). Reported: the worst seconds from the
stop to the process's end over the tries, and the ratio to the anchor's worst. Goal: under 1 s.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import signal
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_fuzz import cases

ROOT = Path(__file__).resolve().parents[1]
DELAYS = (0.2, 0.6, 1.2)
STOPS = ("q", "ctrl-c", "TERM")
LINES = ("long integer", "bare NaN list", "1e999 list", "lone surrogate + backslashes", "console long value")


def _controlling_tty() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def one_exit(path: Path, stop: str, delay: float) -> float:
    """Seconds from ``stop`` (sent ``delay`` s after the app first drew) to the watch process's end."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, b"\x28\x00\x78\x00\x00\x00\x00\x00")  # 40 rows x 120 columns
    env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "steptable", "watch", str(path)], stdin=slave, stdout=slave,
                            stderr=slave, env=env, cwd=ROOT, preexec_fn=_controlling_tty, close_fds=True)
    os.close(slave)
    drew = threading.Event()

    def drain() -> None:  # (a pty nobody reads fills up and blocks the app's writes)
        seen = b""
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            if not drew.is_set():  # the cursor hidden after the alternate screen: raw mode, keys are keys
                seen += data
                at = seen.find(b"\x1b[?1049h")
                if at >= 0 and b"\x1b[?25l" in seen[at:]:
                    drew.set()

    threading.Thread(target=drain, daemon=True).start()
    try:
        if not drew.wait(60):
            raise RuntimeError("the app never drew")
        time.sleep(delay)
        t = time.monotonic()
        if stop == "TERM":
            proc.send_signal(signal.SIGTERM)
        else:
            os.write(master, b"q" if stop == "q" else b"\x03")
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return float("inf")
        return time.monotonic() - t
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4_000_000, help="bytes of the pathological line")
    ap.add_argument("--tries", type=int, default=3, help="tries per case, stop and delay (the worst is reported)")
    a = ap.parse_args()
    rows = b"".join(b'{"step":%d,"loss":0.5}\n' % i for i in range(1000))
    with tempfile.TemporaryDirectory() as d:
        files = {"anchor (ordinary rows)": Path(d) / "anchor" / "metrics.jsonl"}
        for name in LINES:
            reader, line = cases(a.size)[name]
            files[name] = Path(d) / name.replace(" ", "_") / ("train.log" if reader == "console" else "metrics.jsonl")
            prefix = b"".join(b"step:%d - loss:0.5\n" % i for i in range(1000)) if reader == "console" else rows
            files[name].parent.mkdir()
            files[name].write_bytes(prefix + line)
        files["anchor (ordinary rows)"].parent.mkdir()
        files["anchor (ordinary rows)"].write_bytes(rows)
        print(f"{'last line':32} " + " ".join(f"{s:>8}" for s in STOPS) + f" {'worst':>8} {'vs anchor':>10}")
        anchor = None
        for name, path in files.items():
            worst = {s: max(one_exit(path, s, dl) for dl in DELAYS for _ in range(a.tries)) for s in STOPS}
            w = max(worst.values())
            anchor = w if anchor is None else anchor
            print(f"{name:32} " + " ".join(f"{worst[s]:8.2f}" for s in STOPS) + f" {w:8.2f} {w / anchor:9.2f}x",
                  flush=True)


if __name__ == "__main__":
    main()
