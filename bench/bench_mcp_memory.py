"""The MCP server's resident memory over many tool calls on one big run, driven by the MCP SDK's own stdio client.

Two servers are started in this run: as shipped, and the anchor, the same server with a full ``gc.collect()`` after
each command (what the server did while a follower and its sources referred to each other, so that reference
counting alone freed nothing a command read). After each ``tail`` call (from step 0: the whole run read) the
server's RSS is read (psutil). What a server holds after the calls is its last RSS less its RSS before the first;
the ratio is what the shipped server holds over what the anchor holds (1: as flat as collecting after every call;
a server keeping each call's stores: about the number of calls, as far as memory allows).

Run: PYTHONPATH=$PWD python bench/bench_mcp_memory.py [--path DIR] [--calls 40] [--tool tail|summary]
     (default: a 100k-step, 43-key run of about 148 MB written to a temporary directory; needs psutil and mcp)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil

#: the server as shipped; and the same with a full collection after each command (the old workaround)
PLAIN = "from steptable.cli.main import main; raise SystemExit(main(['mcp']))"
COLLECTING = (
    "import gc, steptable.cli.mcpcmd as m\n"
    "inner = m.run_argv\n"
    "def collecting(argv, out, err):\n"
    "    try:\n"
    "        return inner(argv, out, err)\n"
    "    finally:\n"
    "        gc.collect()\n"
    "m.run_argv = collecting\n"
    "from steptable.cli.main import main; raise SystemExit(main(['mcp']))\n"
)


def write_run(path: Path, steps: int, keys: int, seed: int = 0) -> None:
    """A run like a verl GRPO run's: ``keys`` float columns each step."""
    rng = random.Random(seed)
    names = [f"m{i}" for i in range(keys)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for s in range(steps):
            f.write(json.dumps({"step": s, **{k: rng.random() for k in names}}) + "\n")


def _server(parent: psutil.Process) -> psutil.Process:
    found = [p for p in parent.children(recursive=True) if "steptable.cli.main" in " ".join(p.cmdline())]
    assert len(found) == 1, found
    return found[0]


async def _series(code: str, path: Path, run: str, calls: int, tool: str) -> list[int]:
    """RSS of the server before the first call and after each of ``calls`` calls."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    params = StdioServerParameters(command=sys.executable, args=["-c", code], env=env)
    # (tail from step 0: every call reads the whole run, as an agent's first look at it; the last rows alone are
    # read from the file's end)
    args: dict[str, Any] = {"path": str(path), "run": run, "since_step": 0} if tool == "tail" else {"path": str(path)}
    async with Client(params) as client:
        server = _server(psutil.Process())
        rss = [server.memory_info().rss]
        for _ in range(calls):
            got = await client.call_tool(tool, args)
            assert not got.is_error, got.content
            rss.append(server.memory_info().rss)
    return rss


def _mb(rss: list[int]) -> tuple[float, ...]:
    """(before, after the first call, after half the calls, peak, last, held: last less before) in MB."""
    mb = [r / 2**20 for r in rss]
    return mb[0], mb[1], mb[len(mb) // 2], max(mb), mb[-1], mb[-1] - mb[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--path", type=Path, help="a directory holding one run (default: one written here)")
    ap.add_argument("--run", default=None, help="the run's name in that directory (default: its only run)")
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--tool", choices=("tail", "summary"), default="tail")
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--keys", type=int, default=43)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = a.path
        if path is None:
            path = Path(tmp)
            write_run(path / "run.jsonl", a.steps, a.keys)
        run = a.run or next(p for p in sorted(path.iterdir()) if p.suffix == ".jsonl").name
        size = sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20
        print(f"{a.calls} `{a.tool}` calls on {path} ({size:.0f} MB), the MCP SDK's stdio client; RSS in MB")
        print(f"{'server':<24} " + " ".join(f"{h:>7}" for h in ("before", "1 call", "half", "peak", "last", "held",
                                                                 "ratio")))
        anchor = _mb(asyncio.run(_series(COLLECTING, path, run, a.calls, a.tool)))
        shipped = _mb(asyncio.run(_series(PLAIN, path, run, a.calls, a.tool)))
        for name, got in (("gc.collect() each call", anchor), ("as shipped", shipped)):
            print(f"{name:<24} " + " ".join(f"{v:>7.0f}" for v in got) + f" {got[-1] / anchor[-1]:>7.2f}")
    print("held: last RSS less RSS before the first call; ratio: held / the anchor's held (the first line)")


if __name__ == "__main__":
    main()
