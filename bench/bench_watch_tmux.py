"""``steptable watch`` from the user's seat: the real command in a real terminal (tmux), keys typed into it, the screen
read back. Reported as ratios against an anchor measured in the same run (the same columns, 1,000 rows):

    python bench/bench_watch_tmux.py                                    # /tmp/big/run.jsonl (100k steps, 148 MB)
    python bench/bench_watch_tmux.py --big PATH --settle 180 --sweep /tmp/sweeps/s300x2000

- a long run: first frame, all rows read, Home / End, a search that matches nothing (every cell read), the resident
  memory after ``--settle`` seconds, q's exit; each against the anchor's;
- resizing to 80x24, 40x15 and back: seconds until the tables' title is drawn again at each size;
- hostile samples (ANSI, OSC title and clipboard, mouse and alternate-screen switches, markup, RTL, NUL) in the
  generations viewer: the pane's title unchanged, still on the alternate screen, no escape shown as text;
- exit by q and Ctrl-C: the terminal left sane (no alternate screen, no mouse mode, cursor shown);
- ``--sweep DIR`` (bench/sweepdata.py's): the run list's first frame, a filter and a sort key's response.

The times include tmux's polling (a capture every few ms); the ratios are what to compare between commits."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZE = (200, 50)
MODES = "#{pane_dead} #{alternate_on} #{mouse_any_flag} #{mouse_sgr_flag} #{mouse_button_flag}"
HOSTILE = ("clear\x1b[2J\x1b[H title\x1b]0;PWNED\x07 clip\x1b]52;c;ZXZpbA==\x07 mouse\x1b[?1000h alt\x1b[?1049l "
           "[red]markup[/red] [link=https://evil.example]link[/link] \u202eRTL\u202c NUL\x00 C1\x9b31m end")


class Pane:
    """One tmux session running ``cmd`` (the pane is the process: its pid, its modes; kept after it exits)."""

    def __init__(self, name: str, cmd: list[str], size: tuple[int, int] = SIZE) -> None:
        self.name = name
        env = f"PYTHONPATH={ROOT}"
        time.sleep(0.3)  # (a server still exiting from the session before drops a new one)
        self.t0 = time.monotonic()
        self.out = Path(tempfile.gettempdir()) / f"{name}.out"  # the bytes the app wrote
        self.out.unlink(missing_ok=True)
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", str(size[0]), "-y", str(size[1]),
                        f"exec env {env} {' '.join(cmd)}", ";", "set-option", "-t", name, "remain-on-exit", "on",
                        ";", "pipe-pane", "-o", "-t", name, f"cat >> {self.out}"], check=True)

    def screen(self) -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True).stdout

    def show(self, fmt: str) -> str:
        return subprocess.run(["tmux", "display", "-p", "-t", self.name, fmt], capture_output=True,
                              text=True).stdout.strip()

    def keys(self, *keys: str) -> float:
        """Type ``keys`` (tmux names: Home, C-c, Enter, or literal text); the time they were sent."""
        t = time.monotonic()
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)
        return t

    def wait(self, done: Callable[[str], bool], since: float, timeout: float = 120.0) -> float:
        """Seconds from ``since`` until ``done(screen)``."""
        while time.monotonic() - since < timeout:
            if done(self.screen()):
                return time.monotonic() - since
            time.sleep(0.005)
        raise RuntimeError(f"{self.name}: not on screen after {timeout} s:\n{self.screen()}")

    def rss_mb(self) -> float:
        pid = self.show("#{pane_pid}")
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def exit(self, key: str) -> tuple[float, bool]:
        """Seconds from ``key`` until the process ended; whether it left the terminal sane: out of the alternate
        screen, no mouse mode (tmux's flags of the dead pane) and the cursor shown again (the bytes written: tmux's
        cursor flag of a dead pane reads 0 in about half the tries, with the same bytes)."""
        t = self.keys(key)
        while self.show("#{pane_dead}") != "1":
            if time.monotonic() - t > 60:
                raise RuntimeError(f"{self.name}: still running 60 s after {key}")
            time.sleep(0.005)
        took = time.monotonic() - t
        time.sleep(0.3)  # (pipe-pane's cat)
        data = self.out.read_bytes() if self.out.exists() else b""
        return took, self.show(MODES) == "1 0 0 0 0" and data.rfind(b"\x1b[?25h") > data.rfind(b"\x1b[?25l")

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)
        self.out.unlink(missing_ok=True)


def watch(path: Path) -> list[str]:
    return [sys.executable, "-m", "steptable", "watch", str(path)]


def top_step(screen: str) -> int | None:
    """The step of the first row under the first table's header."""
    lines = screen.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.lstrip().startswith("step "):
            first = lines[i + 1].split()
            return int(first[0].lstrip("!")) if first and first[0].lstrip("!").isdigit() else None
    return None


def long_run(path: Path, rows: int, settle: float, tag: str) -> dict[str, float]:
    """The single-run measures of ``path`` (``rows`` rows, the last at step ``rows - 1``)."""
    p = Pane(f"stw-{tag}-{os.getpid()}", watch(path))
    out: dict[str, float] = {}
    try:
        out["first frame"] = p.wait(lambda s: top_step(s) is not None, p.t0)
        out["all rows read"] = p.wait(lambda s: f"{rows:,} rows" in s, p.t0)
        time.sleep(1.0)
        out["Home"] = p.wait(lambda s: top_step(s) == 0, p.keys("Home"))
        out["End"] = p.wait(lambda s: top_step(s) not in (None, 0) and "following" in s, p.keys("End"))
        p.keys("/")
        p.wait(lambda s: "Search cells" in s, time.monotonic())
        p.keys("zzqq")
        out["search, no match"] = p.wait(lambda s: "no match for 'zzqq'" in s, p.keys("Enter"))
        time.sleep(max(0.0, settle - (time.monotonic() - p.t0)))
        out["RSS MB"] = p.rss_mb()
        out["q exit"], sane = p.exit("q")
        out["terminal sane"] = float(sane)
    finally:
        p.close()
    return out


def resize(path: Path) -> dict[str, float]:
    p = Pane(f"str-{os.getpid()}", watch(path))
    out: dict[str, float] = {}
    try:
        p.wait(lambda s: top_step(s) is not None, p.t0)
        for w, h in ((80, 24), (40, 15), SIZE):
            t = time.monotonic()
            subprocess.run(["tmux", "resize-window", "-t", p.name, "-x", str(w), "-y", str(h)], check=True)
            out[f"redraw at {w}x{h}"] = p.wait(
                lambda s, w=w, h=h: len(s.splitlines()) == h and max(len(x) for x in s.splitlines()) <= w
                and "rows ·" in s and top_step(s) is not None, t)
        out["ctrl-c exit"], sane = p.exit("C-c")
        out["terminal sane"] = float(sane)
    finally:
        p.close()
    return out


def hostile(root: Path) -> dict[str, float]:
    run = root / "hostile"
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "loss": 1.0 / (s + 1)}) + "\n"
                                               for s in range(50)))
    (run / "generations.jsonl").write_text("".join(json.dumps({"step": s, "prompt": HOSTILE, "completion": HOSTILE,
                                                               "reward": 1.0}) + "\n" for s in (0, 10, 20)))
    p = Pane(f"sth-{os.getpid()}", watch(run))
    try:
        p.wait(lambda s: top_step(s) is not None, p.t0)
        title = p.show("#{pane_title}")
        p.wait(lambda s: "Generations" in s and "markup" in s, p.keys("v"))
        time.sleep(0.5)
        s = p.screen()
        inert = float(p.show("#{pane_title}") == title and p.show("#{alternate_on}") == "1" and "PWNED" not in s
                      and "[red]markup[/red]" in s and "ZXZpbA" not in s)
        took, sane = p.exit("C-c")  # (q closes the viewer)
        return {"inert": inert, "ctrl-c exit": took, "terminal sane": float(sane)}
    finally:
        p.close()


def sweep(root: Path) -> dict[str, float]:
    runs = sum(1 for d in root.iterdir() if (d / "metrics.jsonl").exists())
    p = Pane(f"sts-{os.getpid()}", watch(root))
    out: dict[str, float] = {}
    try:
        out["list first frame"] = p.wait(lambda s: f"{runs} of {runs} shown" in s, p.t0)
        p.wait(lambda s: "reading" not in s.splitlines()[0], p.t0)  # (every run's digest read)
        t = p.keys("o")
        out["sort (o)"] = p.wait(lambda s: "run ▲" not in s and ("▲" in s or "▼" in s), t)
        p.keys("/")
        time.sleep(0.5)
        p.keys("seed1_")
        out["filter"] = p.wait(lambda s: f"of {runs} shown (filter: seed1_)" in s, p.keys("Enter"))
        out["q exit"], sane = p.exit("q")
        out["terminal sane"] = float(sane)
    finally:
        p.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", default="/tmp/big/run.jsonl", help="a long JSONL run (read only)")
    ap.add_argument("--settle", type=float, default=60.0, help="seconds after start when the RSS is read")
    ap.add_argument("--sweep", default=None, help="a directory of bench/sweepdata.py's runs")
    a = ap.parse_args()
    big = Path(a.big)
    rows = sum(1 for _ in big.open("rb"))
    with tempfile.TemporaryDirectory() as d:
        anchor = Path(d) / "anchor" / "metrics.jsonl"
        anchor.parent.mkdir()
        with big.open("rb") as src, anchor.open("wb") as dst:
            dst.writelines(line for _, line in zip(range(1000), src, strict=False))
        a_res = long_run(anchor, 1000, a.settle, "anchor")
        b_res = long_run(big, rows, a.settle, "big")
        print(f"{'long run':24} {'anchor (1,000 rows)':>20} {f'{big.name} ({rows:,} rows)':>28} {'ratio':>8}")
        for k in a_res:
            print(f"{k:24} {a_res[k]:20.3f} {b_res[k]:28.3f} {b_res[k] / a_res[k] if a_res[k] else 0:7.2f}x")
        for name, res in (("resize (the long run)", resize(big)), ("hostile samples", hostile(Path(d)))):
            print(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in res.items()))
        if a.sweep:
            print("sweep: " + ", ".join(f"{k} {v:.3f}" for k, v in sweep(Path(a.sweep)).items()))


if __name__ == "__main__":
    main()
